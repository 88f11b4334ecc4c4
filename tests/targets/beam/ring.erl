%% A ring of N processes; a token goes M times around it, then a stop goes around once.
-module(ring).
-export([start/0, start/1, run/2, bench/1]).

start() -> start(['10', '100']).

start([N, M]) ->
    bt:run(ring, fun() -> run(list_to_integer(atom_to_list(N)),
                              list_to_integer(atom_to_list(M))) end).

%% Returns the expected counts: N spawns and exits; sends: the ring's message, the first token,
%% N a round, N stops and done; receives: those, and a 'DOWN' for each process.
run(N, M) ->
    Self = self(),
    First = spawn(fun() -> first(Self) end),
    Ring = lists:foldl(fun(_, [Next | _] = Ring) -> [spawn(fun() -> relay(Next) end) | Ring] end,
                       [First], lists:seq(2, N)),
    [monitor(process, P) || P <- Ring],
    First ! {ring, hd(Ring)},
    First ! {token, M},
    receive done -> ok end,
    [receive {'DOWN', _, process, P, normal} -> ok end || P <- Ring],
    Sends = 3 + N * M + N,
    [{spawn, N}, {send, Sends}, {recv, Sends + N}, {exit, N}].

%% The benchmark (tests/bench/beam.sh): the ring of N x M, untraced (plain) or traced by
%% erlang:trace with a tracer that only counts (erlang_trace); prints the microseconds from the
%% first token to done, and the number of events the tracer counted.
bench([N, M, Mode]) ->
    Count = fun Count(C) -> receive {report, To} -> To ! {count, C}; _ -> Count(C + 1) end end,
    Tracer = spawn(fun() -> Count(0) end),
    Self = self(),
    Ring = spawn(fun() ->
        Mode =:= erlang_trace andalso
            erlang:trace(self(), true, [send, 'receive', set_on_spawn, {tracer, Tracer}]),
        {Us, _} = timer:tc(fun() -> run(list_to_integer(atom_to_list(N)),
                                        list_to_integer(atom_to_list(M))) end),
        erlang:trace(self(), false, [all]),
        Self ! {us, Us}
    end),
    Us = receive {us, T} -> T end,
    Tracer ! {report, self()},
    Events = receive {count, C} -> C end,
    io:format("ring ~s ~s ~s: ~b us, ~b erlang:trace events~n", [N, M, Mode, Us, Events]),
    Ring.

first(Main) ->
    receive {ring, Last} -> ok end,
    loop_first(Main, Last).

loop_first(Main, Last) ->
    receive
        {token, 0} -> Last ! stop, receive stop -> ok end, Main ! done;
        {token, K} -> Last ! {token, K - 1}, loop_first(Main, Last)
    end.

relay(Next) ->
    receive
        {token, K} -> Next ! {token, K}, relay(Next);
        stop -> Next ! stop
    end.

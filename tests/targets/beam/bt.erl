%% The harness of the BEAM shim's test programs: runs a scenario in a process of its own
%% (registered as NAME_main, so the trace names it), traced by erlang:trace with a counting
%% tracer, and prints one line: the counts the scenario expects and the BEAM's own counts of
%% sends and receives; then one more with the BEAM's count of runs, which varies from run to
%% run.
%% The scenario's processes are its main process and every process spawned from them; the
%% scenario must leave none running when it returns.
-module(bt).
-export([run/2]).

%% run(Name, Fun): Fun() runs in the scenario's main process and returns the expected counts,
%% a list of {Key, Count}; the exit of the main process is added to them.
run(Name, Fun) ->
    logger:set_primary_config(level, none), % no reports of crashes: no messages to the logger
    Tracer = spawn(fun() -> tracer(#{}) end),
    Harness = self(),
    Main = spawn(fun() ->
        register(list_to_atom(atom_to_list(Name) ++ "_main"), self()),
        Flags = [send, 'receive', running, exiting, procs, set_on_spawn, {tracer, Tracer}],
        erlang:trace(self(), true, Flags),
        Expected = Fun(),
        erlang:trace(self(), false, [all]),
        Harness ! {done, self(), [{K, V + if K =:= exit -> 1; true -> 0 end}
                                  || {K, V} <- Expected]}
    end),
    receive {done, Main, Expected} -> ok end,
    Tracer ! {counts, self(), Main},
    Traced = receive {counts, C} -> C end,
    {value, {runs, Runs}, Counts} = lists:keytake(runs, 1, Traced),
    io:format("{\"test\":\"~s\",\"expected\":{~s},\"erlang_trace\":{~s}}~n",
              [Name, json(Expected), json(Counts)]),
    io:format("{\"erlang_trace_runs\":~b}~n", [Runs]).

json(Counts) ->
    string:join([io_lib:format("\"~s\":~b", [K, V]) || {K, V} <- Counts], ",").

%% Counts what the scenario's processes did, as the BEAM's tracer reports it. The set of the
%% scenario's processes is every process the tracer heard from.
tracer(Events) ->
    receive
        {trace, Pid, Kind, _} = T when Kind =:= in; Kind =:= in_exiting ->
            tracer(add(Events, Pid, {in, T}));
        {trace, Pid, send, _Msg, To} ->
            tracer(add(Events, Pid, {send, To}));
        {trace, Pid, 'receive', _Msg} ->
            tracer(add(Events, Pid, 'receive'));
        {trace, Pid, _, _} ->
            tracer(add(Events, Pid, other));
        {trace, Pid, _, _, _} ->
            tracer(add(Events, Pid, other));
        {counts, From, Main} ->
            From ! {counts, counts(Events, Main)}
    end.

add(Events, Pid, E) -> maps:update_with(Pid, fun(L) -> [E | L] end, [E], Events).

%% A send counts when it goes to one of the processes, or to an alias (a reference): the
%% scenarios use only aliases of their own processes (gen_server's replies). Runs are counted
%% for the processes but Main, which ran before its tracing began and runs
%% after it ends.
counts(Events, Main) ->
    All = lists:append(maps:values(Events)),
    [{send, length([x || {send, To} <- All, is_map_key(To, Events) orelse is_reference(To)])},
     {recv, length([x || 'receive' <- All])},
     {runs, length([x || {in, _} <- lists:append(maps:values(maps:remove(Main, Events)))])}].

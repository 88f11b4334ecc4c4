%% A gen_server, registered as gensrv_server: C calls and K casts from the main process, then a
%% cast that stops it.
-module(gensrv).
-behaviour(gen_server).
-export([start/0, start/1, run/2]).
-export([init/1, handle_call/3, handle_cast/2]).

start() -> start(['20', '30']).

start([C, K]) ->
    bt:run(gensrv, fun() -> run(list_to_integer(atom_to_list(C)),
                                list_to_integer(atom_to_list(K))) end).

%% The server's start: a spawn and its ack; a call: the request and the reply (to an alias); a
%% cast: the request; the stop: a cast, and the 'DOWN' of the monitor the main process holds.
run(C, K) ->
    {ok, Server} = gen_server:start({local, gensrv_server}, ?MODULE, 0, []),
    Ref = monitor(process, Server),
    Sum = lists:foldl(fun(I, _) -> gen_server:cast(Server, {add, I}), gen_server:call(Server, get)
                      end, 0, lists:seq(1, min(C, K))),
    [gen_server:cast(Server, {add, 1}) || _ <- lists:seq(1, K - min(C, K))],
    [gen_server:call(Server, get) || _ <- lists:seq(1, C - min(C, K))],
    true = is_integer(Sum),
    gen_server:cast(Server, stop),
    receive {'DOWN', Ref, process, Server, normal} -> ok end,
    Casts = K + 1,
    [{spawn, 1}, {send, 1 + 2 * C + Casts}, {recv, 1 + 2 * C + Casts + 1}, {exit, 1},
     {'send:$gen_call', C}, {'send:$gen_cast', Casts}, {'send:ack', 1}, {'exit:normal', 2}].

init(N) -> {ok, N}.

handle_call(get, _From, N) -> {reply, N, N}.

handle_cast({add, I}, N) -> {noreply, N + I};
handle_cast(stop, N) -> {stop, normal, N}.

%% A supervisor restarting a crashing child: the main process makes the child crash K times
%% (it exits with reason boom), waits for each restart, then shuts the supervisor down.
-module(supv).
-behaviour(supervisor).
-export([start/0, start/1, init/1, start_child/1, child_init/1]).

start() -> start(['5']).

start([K]) ->
    bt:run(supv, fun() -> run(list_to_integer(atom_to_list(K))) end).

%% Spawns: the supervisor and K + 1 children. Sends: the supervisor's ack to the main process;
%% for each child, its ack to the supervisor and its started to the main process; K crashes.
%% Receives: those; the supervisor's 'EXIT' of each crash and of the main process's shutdown,
%% and the 'DOWN' and 'EXIT' of the child it shuts down; the main process's 'EXIT' of the
%% supervisor.
%% Exits: K children with boom; the last child and the supervisor with shutdown.
run(K) ->
    process_flag(trap_exit, true),
    {ok, Sup} = supervisor:start_link(?MODULE, {self(), K}),
    First = receive {started, P} -> P end,
    lists:foldl(fun(_, Child) ->
                    Child ! crash,
                    receive {started, Next} -> Next end
                end, First, lists:seq(1, K)),
    exit(Sup, shutdown),
    receive {'EXIT', Sup, shutdown} -> ok end,
    [{spawn, K + 2}, {send, 3 * K + 3}, {recv, 4 * K + 7}, {exit, K + 2},
     {'send:crash', K}, {'send:started', K + 1}, {'send:ack', K + 2},
     {'exit:boom', K}, {'exit:shutdown', 2}].

init({Main, K}) ->
    {ok, {#{strategy => one_for_one, intensity => K + 1, period => 3600},
          [#{id => crasher, start => {?MODULE, start_child, [Main]}}]}}.

start_child(Main) -> proc_lib:start_link(?MODULE, child_init, [Main]).

child_init(Main) ->
    proc_lib:init_ack({ok, self()}),
    Main ! {started, self()},
    receive crash -> exit(boom) end.

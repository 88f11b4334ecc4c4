%% A process killed with exit(Pid, kill): it takes K messages, says so, and waits for a
%% message that never comes; the main process kills it and takes the 'DOWN'.
-module(kill).
-export([start/0, start/1]).

start() -> start(['20']).

start([K]) ->
    bt:run(kill, fun() -> run(list_to_integer(atom_to_list(K))) end).

%% Sends: K and ready; receives: those, and the 'DOWN' with reason killed.
run(K) ->
    Main = self(),
    {Victim, Ref} = spawn_monitor(fun() -> victim(Main, K) end),
    [Victim ! {hold, I} || I <- lists:seq(1, K)],
    receive ready -> ok end,
    exit(Victim, kill),
    receive {'DOWN', Ref, process, Victim, killed} -> ok end,
    [{spawn, 1}, {send, K + 1}, {recv, K + 2}, {exit, 1},
     {'send:hold', K}, {'send:ready', 1}, {'exit:killed', 1}].

victim(Main, K) ->
    [receive {hold, I} -> ok end || I <- lists:seq(1, K)],
    Main ! ready,
    receive never -> ok end.

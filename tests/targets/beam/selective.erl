%% Selective receive: the main process sends N {a, I} then N {b, I} to a worker, which takes
%% every b first, in reverse order, then every a, in reverse order, and sends back their sum.
-module(selective).
-export([start/0, start/1]).

start() -> start(['50']).

start([N]) ->
    bt:run(selective, fun() -> run(list_to_integer(atom_to_list(N))) end).

%% Sends: 2N and the sum; receives: those, and the worker's 'DOWN'.
run(N) ->
    Main = self(),
    {Worker, Ref} = spawn_monitor(fun() -> worker(Main, N) end),
    [Worker ! {a, I} || I <- lists:seq(1, N)],
    [Worker ! {b, I} || I <- lists:seq(1, N)],
    Sum = N * (N + 1),
    receive {sum, Sum} -> ok end,
    receive {'DOWN', Ref, process, Worker, normal} -> ok end,
    [{spawn, 1}, {send, 2 * N + 1}, {recv, 2 * N + 2}, {exit, 1},
     {'send:a', N}, {'send:b', N}, {'send:sum', 1}].

worker(Main, N) ->
    B = lists:sum([receive {b, I} -> I end || I <- lists:seq(N, 1, -1)]),
    A = lists:sum([receive {a, I} -> I end || I <- lists:seq(N, 1, -1)]),
    Main ! {sum, A + B}.

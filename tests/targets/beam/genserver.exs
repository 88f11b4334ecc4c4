# An Elixir GenServer: C calls and K casts from the main process, then a cast that stops it;
# run through tests/targets/beam/bt.erl as the Erlang scenarios are.
defmodule Counter do
  use GenServer

  @impl true
  def init(n), do: {:ok, n}

  @impl true
  def handle_call(:get, _from, n), do: {:reply, n, n}

  @impl true
  def handle_cast({:add, i}, n), do: {:noreply, n + i}
  def handle_cast(:stop, n), do: {:stop, :normal, n}
end

defmodule Scenario do
  # The start: a spawn and its ack; a call: the request and the reply; a cast: the request;
  # the stop: a cast, and the 'DOWN' of the main process's monitor.
  def run(c, k) do
    {:ok, server} = GenServer.start(Counter, 0)
    ref = Process.monitor(server)
    Enum.each(1..k, fn i -> GenServer.cast(server, {:add, i}) end)
    Enum.each(1..c, fn _ -> GenServer.call(server, :get) end)
    GenServer.cast(server, :stop)
    wait_down(ref)

    [spawn: 1, send: 1 + 2 * c + k + 1, recv: 1 + 2 * c + k + 2, exit: 1,
     "send:$gen_call": c, "send:$gen_cast": k + 1, "send:ack": 1, "exit:normal": 2]
  end

  defp wait_down(ref) do
    receive do
      {:DOWN, ^ref, :process, _, :normal} -> :ok
    end
  end
end

[c, k] =
  case System.argv() do
    [c, k] -> [String.to_integer(c), String.to_integer(k)]
    [] -> [20, 30]
  end

:bt.run(:exgenserver, fn -> Scenario.run(c, k) end)

# Counts, from a BEAM trace's JSONL (slurped), what the processes of one test scenario did: its
# main process, registered as $main, and every process spawned from them. Sends and receives
# are those between two of them; "matched" counts the sends whose next event with the same
# message id is their receive: same receiver, same sender. Steps are those of the processes but
# the main one; "outside_steps" counts the sends and receives not made inside a step of their
# process on the same thread.
def key: tostring;
(map(select(.actor_name == $main)) | first | .actor) as $m
| (reduce (.[] | select(.event == "spawn")) as $e ({($m | key): true};
      if .[$e.peer | key] then .[$e.actor | key] = true else . end)) as $set
| def in_set(id): id != null and $set[id | key] == true;
  def mine: in_set(.actor);
  def between: mine and in_set(.sender);
  [.[] | select(.event == "send" or .event == "recv") | select(between)] as $messages
| ($messages | group_by(.msg)
   | map(. as $g | [range(0; length - 1)
                    | select($g[.].event == "send" and $g[. + 1].event == "recv"
                             and $g[.].actor == $g[. + 1].actor
                             and $g[.].sender == $g[. + 1].sender)] | length) | add // 0) as $matched
| (reduce .[] as $e ({running: {}, outside: 0};
      ($e.tid | key) as $t
      | if $e.event == "step_begin" then .running[$t] = $e.actor
        elif $e.event == "step_end" then .running[$t] = null
        elif ($e.event == "send" and in_set($e.sender) and in_set($e.actor)
              and .running[$t] != $e.sender)
          or ($e.event == "recv" and in_set($e.actor) and .running[$t] != $e.actor)
        then .outside += 1
        else . end) | .outside) as $outside
| {
    spawn: (map(select(.event == "spawn" and in_set(.peer))) | length),
    send: ($messages | map(select(.event == "send")) | length),
    recv: (map(select(.event == "recv" and mine)) | length),
    recv_between: ($messages | map(select(.event == "recv")) | length),
    matched: ($matched),
    outside_steps: ($outside),
    exit: (map(select(.event == "exit" and mine)) | length),
    step_begin: (map(select(.event == "step_begin" and mine and .actor != $m)) | length),
    step_end: (map(select(.event == "step_end" and mine and .actor != $m)) | length),
    schedule: (map(select(.event == "schedule" and mine)) | length),
    processes: ($set | length),
    named_main: (map(select(.actor == $m and .actor_pid != null)) | length > 0),
    msg_names: ([.[] | select(.event == "send" and between) | .msg_name // "none"] | unique),
    sends_named: ([.[] | select(.event == "send" and between) | .msg_name // "none"]
                  | group_by(.) | map({(.[0]): length}) | add // {}),
    exits_by_reason: ([.[] | select(.event == "exit" and mine) | .msg_name // "none"]
                      | group_by(.) | map({(.[0]): length}) | add // {})
  }

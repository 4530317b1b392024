#!/bin/sh
# clock: a zot extension in plain POSIX shell + jq, no SDK.
#
#   /now [strftime format]         shows the current time (display)
#   /remind <N[s|m|h]> <text>      notifies you after the delay (notify)
#
# The whole protocol in one file: send hello, wait for hello_ack, register
# the commands, send ready, then answer command_invoked frames until
# shutdown (answer shutdown_ack) or EOF. One JSON object per line on
# stdout; diagnostics go to stderr (zot's log for this extension).

set -u

if ! command -v jq >/dev/null 2>&1; then
  echo "clock: jq is required but not on PATH (https://jqlang.org)" >&2
  exit 1
fi

VERSION=1.0.0
CR=$(printf '\r')
reminders=""

# One frame per line. Frames are small, so each printf is a single write
# and reminders firing in the background never interleave with replies.
emit() {
  printf '%s\n' "$1"
}

reply_display() { # id text
  emit "$(jq -cn --arg id "$1" --arg text "$2" '{type:"command_response", id:$id, action:"display", display:$text}')"
}

reply_error() { # id message
  emit "$(jq -cn --arg id "$1" --arg error "$2" '{type:"command_response", id:$id, action:"noop", error:$error}')"
}

notify() { # level message
  emit "$(jq -cn --arg level "$1" --arg message "$2" '{type:"notify", level:$level, message:$message}')"
}

cmd_now() { # id args
  format=${2:-"%Y-%m-%d %H:%M:%S %Z"}
  if now=$(date "+$format" 2>/dev/null); then
    reply_display "$1" "$now"
  else
    reply_error "$1" "date cannot use the format \"$format\""
  fi
}

cmd_remind() { # id args
  usage="usage: /remind <N[s|m|h]> <text>, e.g. /remind 10m stretch"
  delay=${2%%[ 	]*}
  text=${2#"$delay"}
  text=${text#"${text%%[! 	]*}"}
  number=${delay%[smh]}
  unit=${delay#"$number"}
  case $number in
    '' | *[!0-9]*) reply_error "$1" "$usage"; return ;;
  esac
  if [ -z "$text" ]; then
    reply_error "$1" "$usage"
    return
  fi
  case $unit in
    '' | s) seconds=$number ;;
    m) seconds=$((number * 60)) ;;
    h) seconds=$((number * 3600)) ;;
  esac
  # The reminder waits in the background; a TERM (at shutdown) ends it and its sleep.
  (
    trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
    sleep "$seconds" &
    sleeper=$!
    wait "$sleeper"
    notify info "Reminder: $text"
  ) &
  reminders="$reminders $!"
  reply_display "$1" "Reminder set: \"$text\" in $number${unit:-s}."
}

stop_reminders() {
  for pid in $reminders; do
    kill "$pid" 2>/dev/null
  done
}

emit "$(jq -cn --arg v "$VERSION" '{type:"hello", name:"clock", version:$v, capabilities:["commands"]}')"

while IFS= read -r line || [ -n "$line" ]; do
  line=${line%"$CR"}
  [ -z "$line" ] && continue
  # type, id, name, args of the frame, shell-quoted by jq; nothing if it is not a JSON object.
  fields=$(printf '%s\n' "$line" | jq -r 'select(type == "object") | [.type // "", .id // "", .name // "", .args // ""] | @sh' 2>/dev/null)
  if [ -z "$fields" ]; then
    echo "clock: skipping a malformed frame: $line" >&2
    continue
  fi
  eval "set -- $fields"
  case $1 in
    hello_ack)
      emit '{"type":"register_command","name":"now","description":"show the current time: /now [strftime format]"}'
      emit '{"type":"register_command","name":"remind","description":"notify me later: /remind <N[s|m|h]> <text>"}'
      emit '{"type":"ready"}'
      ;;
    command_invoked)
      case $3 in
        now) cmd_now "$2" "$4" ;;
        remind) cmd_remind "$2" "$4" ;;
        *) reply_error "$2" "clock has no command /$3" ;;
      esac
      ;;
    shutdown)
      stop_reminders
      emit '{"type":"shutdown_ack"}'
      exit 0
      ;;
    '')
      echo "clock: skipping a frame without a type: $line" >&2
      ;;
    *)
      echo "clock: ignoring a $1 frame" >&2
      ;;
  esac
done

stop_reminders

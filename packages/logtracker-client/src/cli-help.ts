const COMMON_FLAGS = `Flags:
  -p, --project <id>         the project the logs go to (or LOGTRACKER_PROJECT)
      --url <url>            the log tracker's address (or LOGTRACKER_URL; default http://127.0.0.1:8001)
      --key <key>            the project's ingest key (or LOGTRACKER_KEY; prefer the variable: flags show in ps)
  -s, --source <name>        every log's source (default: SOURCE_DEFAULT)
  -l, --level <level>        a plain line's level when no marker names one (default info)
      --flush-ms <ms>        send a batch this long after its first line at the latest (default 1000)
      --flush-timeout <time> at the end, how long to keep trying to deliver what is left (default 10s)
      --max-backoff <time>   the longest wait between two attempts at a batch (default 30s)
      --best-effort          exit 0 even when lines could not be delivered
      --no-gzip              send request bodies uncompressed (by default gzip, Content-Encoding: gzip)
  -q, --quiet                no summary and no retry notices on stderr (lost lines are still reported)
  -h, --help                 this help

Environment:
  LOGTRACKER_URL       the log tracker's address
  LOGTRACKER_KEY       the project's ingest key
  LOGTRACKER_PROJECT   the project's id
  GITHUB_*, CI_*, JOB_NAME/BUILD_URL/GIT_*
                       read in GitHub Actions, GitLab CI and Jenkins: each log carries the pipeline
                       (repository, ref, commit, job, run URL) in its context, under "ci"`;

const LINES = `Each line becomes one log. A JSON object keeps its fields: level (pino's numbers, or names
such as warn, fatal, trace), message or msg, time or timestamp (ISO 8601 or epoch milliseconds);
the others go to the log's context. Any other line is the message, its level read from markers
such as ERROR, WARN, [error], E/, FATAL or DEBUG (info by default), colour codes stripped. Empty
lines are skipped; lines over the server's 65 536 characters are cut. Lines keep their order.`;

const DELIVERY = `Batches of up to 1 000 lines are sent one at a time, in order, each with its own Idempotency-Key,
and retried with backoff on network errors, 429 and 5xx until stored: a retried batch is stored
once. When the server is slower than the input, or away, reading pauses once four batches wait
(memory stays bounded) and resumes as they are delivered. On end of input, SIGTERM or SIGINT
(after which the input is read for one more second), what is left is delivered within
--flush-timeout; lines that could not be delivered are counted on stderr and make the exit code 1
(unless --best-effort).`;

export const MAIN_HELP = `logtracker: ship logs to the log tracker

Usage:
  logtracker <command> [flags]

Commands:
  ship    send lines from standard input or files, one log per line
  run     run a command, pass its output through, and ship its lines

Run "logtracker <command> --help" for a command's flags.

Examples:
  npm test 2>&1 | logtracker ship --project 12
  logtracker ship --project 12 build.log
  logtracker run --project 12 -- npm test
`;

export const SHIP_HELP = `Send lines of text to the log tracker, one log per line.

Usage:
  logtracker ship [flags] [file ...]

Reads standard input when no file is named, or for "-"; files are read one after the other.

${LINES}

${DELIVERY}

${COMMON_FLAGS.replace('SOURCE_DEFAULT', 'the file\'s name, or "cli" for standard input')}

Exit status: 0 when every line was delivered, 1 when some were lost, 2 on a usage error,
128+n when stopped by signal n.

Examples:
  export LOGTRACKER_URL=https://logs.example.com LOGTRACKER_KEY=lt_...
  npm test 2>&1 | logtracker ship --project 12
  logtracker ship --project 12 --source deploy deploy.log
  kubectl logs -f deploy/api | logtracker ship -p 12 -s api --flush-ms 200
`;

export const RUN_HELP = `Run a command, pass its output through unchanged, and ship its lines to the log tracker.

Usage:
  logtracker run [flags] -- <command> [args ...]

The command's standard output and error are written to this process's, byte for byte, and each
of their lines is shipped as "logtracker ship" would. SIGTERM and SIGINT are passed to the command.
The exit status is the command's own (128+n when a signal n ended it); when the command succeeded
but lines could not be delivered, it is 1 (unless --best-effort).

${LINES}

${DELIVERY}

${COMMON_FLAGS.replace('SOURCE_DEFAULT', "the command's name")}

Examples:
  logtracker run --project 12 -- npm test
  logtracker run -p 12 -s migrations --best-effort -- ./migrate.sh --to latest
`;

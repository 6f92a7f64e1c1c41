"""A Python that has imported numpy and tyche once and forks a child for each Python API case.

fuzz_inputs.py starts one per job, with the cases' environment (the sentinel's secret first, so
the children's /proc/self/environ holds it). Importing numpy and tyche took a fresh interpreter
0.3 s, most of each Python case's time; a forked child starts with both imported and is otherwise
the process a case had: its own session (the driver kills its group), the case's folder and
environment, stdout and stderr to the case's files, a stdin that never ends.

Protocol, one JSON object per line. In: {"argv": [python, "-c", code, args...], "cwd", "env",
"out", "err"}. Out: {"pid": N} once the child runs, then {"status": wait status, "maxrss": KiB}
when it has ended. The child runs `code` as `python -c` would: sys.argv is ["-c", args...], and
its exit status is that of SystemExit (0 when the code ends).
"""
import json
import os
import sys
import traceback

try:  # a failing import is the child's to report: the case's code imports tyche again
    import numpy  # noqa: F401
    import tyche  # noqa: F401
    import tyche.onnx  # noqa: F401
except Exception:
    pass

never_read, never_write = os.pipe()  # kept open: reads of the children's stdin block


def child(request: dict) -> int:
    os.setsid()
    if request.get("cwd"):
        os.chdir(request["cwd"])
    os.environ.update(request.get("env") or {})
    out = os.open(request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(never_read, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    for fd in (out, err, never_read, never_write):
        os.close(fd)
    argv = request["argv"]
    sys.argv = ["-c", *argv[3:]]
    try:
        exec(compile(argv[2], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        return 0
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        return 1


def main() -> None:
    replies = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        replies.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = child(request)
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code & 0xFF)
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, status, usage = os.wait4(pid, 0)
        replies.write(json.dumps({"status": status, "maxrss": usage.ru_maxrss}) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()

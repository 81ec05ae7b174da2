"""A TCP forwarder in front of an engine that can stop taking connections, as a frozen host does.

Usage: python3 tcp_gate.py UPSTREAM_PORT. Prints its own port, then forwards every connection to
127.0.0.1:UPSTREAM_PORT. A line "freeze" on stdin stops accepting: the listen backlog is set to 0
and one connection that is never accepted fills the queue, so the kernel drops every later SYN
and a new connection hangs in SYN_SENT (connections already made go on). Prints "frozen" then.
"""

import socket
import sys
import threading

upstream = int(sys.argv[1])
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(64)
ls.settimeout(0.05)
port = ls.getsockname()[1]
frozen = threading.Event()


def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def accept_loop():
    while not frozen.is_set():
        try:
            c, _ = ls.accept()
        except socket.timeout:
            continue
        except OSError:
            return
        c.settimeout(None)
        u = socket.create_connection(("127.0.0.1", upstream))
        threading.Thread(target=pump, args=(c, u), daemon=True).start()
        threading.Thread(target=pump, args=(u, c), daemon=True).start()


acceptor = threading.Thread(target=accept_loop, daemon=True)
acceptor.start()
print(port, flush=True)
fillers = []
for line in sys.stdin:
    if line.strip() == "freeze":
        frozen.set()
        acceptor.join()
        ls.listen(0)
        f = socket.socket()
        f.setblocking(False)
        try:
            f.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(f)
        print("frozen", flush=True)

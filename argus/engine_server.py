"""Entry point of the managed local engine process: ``llama_cpp.server`` for one GGUF on loopback.

Started by ``argus.engine.ManagedServer`` as ``python -m argus.engine_server …``; not meant to be
run by hand (``python -m llama_cpp.server`` is the user-facing equivalent). It differs from that
command in two ways only: it binds 127.0.0.1, and it exits on its own when the process that
started it is gone (killed, crashed, or ended without running its exit handlers), so an engine is
never left behind.
"""

from __future__ import annotations

import argparse
import os
import threading
import time


def _exit_with_parent(parent_pid: int, every_s: float = 0.5) -> None:
    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(0)
            time.sleep(every_s)

    threading.Thread(target=watch, name="argus-parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m argus.engine_server")
    parser.add_argument("--model", required=True, help="GGUF file")
    parser.add_argument("--alias", required=True, help="model name the server answers to")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--n-threads", type=int, default=0, help="0: every core")
    parser.add_argument("--parent-pid", type=int, default=0, help="exit when this process is gone")
    args = parser.parse_args(argv)
    if args.parent_pid:
        _exit_with_parent(args.parent_pid)

    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    threads = args.n_threads or max(1, os.cpu_count() or 1)
    app = create_app(
        server_settings=ServerSettings(host="127.0.0.1", port=args.port),
        model_settings=[
            ModelSettings(model=args.model, model_alias=args.alias, n_ctx=args.n_ctx, n_threads=threads,
                          n_threads_batch=threads, seed=0, verbose=False)
        ],
    )
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()

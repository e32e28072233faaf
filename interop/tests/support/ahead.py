"""Work started ahead, so that the machine's two cores are busy while a test waits: every table a
module builds (its `build(root, name)`: the read matrix's tables, one real tidemark CLI run and
one `show` per commit, each a Node process start; the write matrix's round trips) is built by
two workers from the session's first test on, in the order the tests need them, while the Spark
session starts (on a clean clone: Ivy resolving Delta's jars from Maven Central) and while the
tests of the tables built before run."""

from __future__ import annotations

import inspect
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

# Two builds at a time (a tidemark process runs DuckDB on one thread): with the Spark session and
# the test in progress beside them, more would only queue for the same two cores.
WORKERS = 2


class Once:
    """A value made once, in a thread of its own (the Spark session): start() begins making it,
    result() waits for it (starting it if nothing did)."""

    def __init__(self, make: Callable[[], Any], name: str):
        self.make, self.name = make, name
        self.future: Future | None = None
        self.lock = threading.Lock()

    def start(self) -> Future:
        with self.lock:
            if self.future is None:
                self.future = Future()
                threading.Thread(target=self._run, args=(self.future,), name=self.name, daemon=True).start()
            return self.future

    def _run(self, future: Future) -> None:
        try:
            future.set_result(self.make())
        except BaseException as err:  # noqa: BLE001 (raised again where the value is needed)
            future.set_exception(err)

    def result(self) -> Any:
        return self.start().result()

    def made(self) -> Any | None:
        """The value if it was made, else None (nothing waits)."""
        f = self.future
        return f.result() if f is not None and f.done() and f.exception() is None else None


class Ahead:
    """The modules' tables, each built once by the pool: a module's `build(root, name)` (name
    None for a module with one table) gets the Spark session too if it takes `spark`."""

    def __init__(self, mktemp: Callable[[str], Path], spark: Once):
        self.mktemp, self.spark = mktemp, spark
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="build")
        self.tables: dict[tuple[str, Any], Future] = {}
        self.lock = threading.Lock()

    def build(self, module: ModuleType, name: Any) -> Future:
        """Submit the module's table `name`, once; its future."""
        key = (module.__name__, name)
        with self.lock:
            if key not in self.tables:
                root = self.mktemp(module.__name__.removeprefix("test_") + ("" if name is None else f"_{name}"))
                self.tables[key] = self.pool.submit(self._build, module, root, name)
            return self.tables[key]

    def _build(self, module: ModuleType, root: Path, name: Any) -> Any:
        extra = {"spark": self.spark.result()} if "spark" in inspect.signature(module.build).parameters else {}
        return module.build(root, name, **extra)

    def table(self, module: ModuleType, name: Any) -> Any:
        """The built table; a failed build raises its error in every test that needs it."""
        return self.build(module, name).result()

    def close(self) -> None:
        """Drop what nothing asked for yet, and wait for the builds under way."""
        self.pool.shutdown(wait=True, cancel_futures=True)

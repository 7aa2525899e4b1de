"""A least-recently-used map bounded by the size of what it holds, shared by threads."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["SizedLRU"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SizedLRU(Generic[K, V]):
    """``put`` evicts the least recently used values until the sizes sum to ``max_size`` or
    less; a value larger than ``max_size`` on its own is not kept."""

    def __init__(self, max_size: int, size: Callable[[V], int]) -> None:
        self.max_size = max_size
        self._size_of = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        return self._size

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        size = self._size_of(value)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._size -= self._size_of(old)
            if size > self.max_size:
                return
            self._items[key] = value
            self._size += size
            while self._size > self.max_size:
                _, dropped = self._items.popitem(last=False)
                self._size -= self._size_of(dropped)

    def discard(self, key: K) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._size -= self._size_of(old)

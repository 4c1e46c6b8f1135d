"""Task scheduling for the queue workers."""

import heapq
import time
from dataclasses import dataclass, field


MAX_RETRIES = 3


@dataclass(order=True)
class Task:
    """A task waiting to run at a given time."""

    due: float
    name: str = field(compare=False)
    retries: int = field(default=0, compare=False)

    def overdue(self, now):
        """Report whether the task should have run already."""
        return self.due < now


class Scheduler:
    """Runs tasks in the order they fall due.

    The scheduler is not thread-safe; give each worker its own.
    """

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._heap = []

    def add(self, name, delay=0.0):
        """Schedule a task to run after delay seconds."""
        task = Task(self._clock() + delay, name)
        heapq.heappush(self._heap, task)
        return task

    def due(self):
        """Pop and return every task that is due now."""
        now = self._clock()
        out = []
        while self._heap and self._heap[0].due <= now:
            out.append(heapq.heappop(self._heap))
        return out

    async def drain(self, run):
        """Run every due task with the coroutine run."""
        for task in self.due():
            try:
                await run(task)
            except Exception:
                if task.retries < MAX_RETRIES:
                    task.retries += 1
                    heapq.heappush(self._heap, task)


def backoff(attempt, base=0.5, cap=30.0):
    """Return the delay before retry number attempt."""
    return min(cap, base * (2 ** attempt))

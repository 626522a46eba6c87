"""The content of one `.rm` file: named MDPs, machines and tasks."""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from ..errors import RmtkError
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..task import Task

Model = LabeledMDP | RewardMachine | Task


@attrs.frozen
class RmFile:
    """Named blocks of a `.rm` file, by kind. ``==`` compares contents (not comments)."""

    mdps: dict[str, LabeledMDP] = attrs.field(factory=dict, converter=dict)
    machines: dict[str, RewardMachine] = attrs.field(factory=dict, converter=dict)
    tasks: dict[str, Task] = attrs.field(factory=dict, converter=dict)

    @classmethod
    def of(cls, *objects: Model) -> RmFile:
        """A file holding ``objects``; a task brings its MDP and machine (if any) along."""
        mdps: dict[str, LabeledMDP] = {}
        machines: dict[str, RewardMachine] = {}
        tasks: dict[str, Task] = {}

        def put(table: dict, obj, kind: str) -> None:
            old = table.get(obj.name)
            if old is not None and old is not obj and old != obj:
                raise RmtkError(f"two different {kind}s are named {obj.name!r}")
            table[obj.name] = obj

        for obj in objects:
            if isinstance(obj, Task):
                put(mdps, obj.mdp, "mdp")
                if obj.machine is not None:
                    put(machines, obj.machine, "machine")
                put(tasks, obj, "task")
            elif isinstance(obj, LabeledMDP):
                put(mdps, obj, "mdp")
            elif isinstance(obj, RewardMachine):
                put(machines, obj, "machine")
            elif isinstance(obj, RmFile):
                for sub in obj:
                    put({LabeledMDP: mdps, RewardMachine: machines, Task: tasks}[type(sub)], sub, type(sub).__name__)
            else:
                raise TypeError(f"cannot put a {type(obj).__name__} in an .rm file")
        return cls(mdps, machines, tasks)

    def __iter__(self) -> Iterator[Model]:
        yield from self.mdps.values()
        yield from self.machines.values()
        yield from self.tasks.values()

    def __len__(self) -> int:
        return len(self.mdps) + len(self.machines) + len(self.tasks)

    def names(self) -> list[str]:
        return [f"{kind} {name}" for kind, table in self._tables() for name in table]

    def _tables(self):
        return (("task", self.tasks), ("machine", self.machines), ("mdp", self.mdps))

    def get(self, name: str, kind: str | None = None) -> Model:
        """The block called ``name`` (a task before a machine before an MDP, unless ``kind``)."""
        for k, table in self._tables():
            if (kind is None or kind == k) and name in table:
                return table[name]
        what = f"{kind} " if kind else ""
        known = ", ".join(self.names()) or "nothing"
        raise RmtkError(f"no {what}block named {name!r} (the file defines: {known})")

    def __getitem__(self, name: str) -> Model:
        return self.get(name)

    def only(self, kind: str) -> Model:
        """The single block of ``kind``; an error naming the candidates otherwise."""
        table = dict(self._tables())[kind]
        if len(table) != 1:
            which = ", ".join(table) if table else "none"
            raise RmtkError(f"expected exactly one {kind} in the file, found {len(table)} ({which}); name one")
        return next(iter(table.values()))

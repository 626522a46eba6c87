"""What a strategy can do beyond the methods its protocol requires (docs/design/05-strategies.md).

A strategy's *capabilities* are documented attributes and methods with defaults, collected in
a small base class per protocol (:class:`rmtk.ptp.tree.PTPCapabilities`,
:class:`rmtk.sat.encoders.EncoderCapabilities`). rmtk's strategies inherit their base and override
what they can do; the :class:`~rmtk.learner.pipeline.Learner` reads capabilities, never probes for
them. A user's strategy does the same, or stays purely structural (only the protocol's
methods): it is then read through :meth:`Capabilities.of`, which takes what the strategy
defines and the base's default for the rest. A new capability is a new defaulted member of a
base class, so existing strategies keep working unchanged.
"""

from __future__ import annotations

import inspect


class Capabilities:
    """Base of the capability classes: the defaults a strategy has when it does not say."""

    __slots__ = ()

    @classmethod
    def of(cls, strategy):
        """``strategy`` itself when it inherits ``cls``; otherwise (a purely structural strategy)
        a read-only view of it in which every capability it does not define has ``cls``'s
        default."""
        return strategy if isinstance(strategy, cls) else _WithDefaults(strategy, cls)


class _WithDefaults:
    """A structural strategy read with the defaults of a capability class."""

    __slots__ = ("_defaults", "_strategy")

    def __init__(self, strategy, defaults: type):
        self._strategy, self._defaults = strategy, defaults

    def __getattr__(self, name: str):
        if hasattr(self._strategy, name):
            return getattr(self._strategy, name)
        # a default method or property is bound to this view, so that what it reads of the
        # strategy (another capability) is the strategy's when defined, else the default too
        default = inspect.getattr_static(self._defaults, name)
        return default.__get__(self, type(self)) if hasattr(default, "__get__") else default

    def __repr__(self) -> str:
        return repr(self._strategy)

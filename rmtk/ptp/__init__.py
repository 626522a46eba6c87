"""Prefix tree policies (paper section 2.3).

Modules:

* :mod:`rmtk.ptp.tree`: the PTP strategy protocol and the prefix tree;
* :mod:`rmtk.ptp.exact`: the exact prefix tree policy of a task;
* :mod:`rmtk.ptp.empirical`: the empirical prefix tree policy of demonstrations (paper eq. 17).

The names of :mod:`rmtk.ptp.tree` are read here too (``rmtk.ptp.X`` as before this folder held
several modules), imported on first use.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .tree import (
        ARRAY_EVENTS as ARRAY_EVENTS,
    )
    from .tree import (
        MAX_TREE_LEVELS as MAX_TREE_LEVELS,
    )
    from .tree import (
        MAX_TREE_PAIRS as MAX_TREE_PAIRS,
    )
    from .tree import (
        PTP as PTP,
    )
    from .tree import (
        SPLIT_BLOCK as SPLIT_BLOCK,
    )
    from .tree import (
        TRIPLE_CHUNK as TRIPLE_CHUNK,
    )
    from .tree import (
        Disagreements as Disagreements,
    )
    from .tree import (
        PolicyFn as PolicyFn,
    )
    from .tree import (
        PrefixTree as PrefixTree,
    )
    from .tree import (
        PrefixTreePolicy as PrefixTreePolicy,
    )
    from .tree import (
        PTPCapabilities as PTPCapabilities,
    )
    from .tree import (
        Trie as Trie,
    )
    from .tree import (
        TrieBuilder as TrieBuilder,
    )
    from .tree import (
        build_prefix_tree as build_prefix_tree,
    )
    from .tree import (
        disagreements as disagreements,
    )

__getattr__, __dir__ = lazy_exports(__name__, {}, fallback=".tree")

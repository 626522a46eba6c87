"""The product of a labeled MDP with a reward machine (paper section 2.2).

Modules:

* :mod:`rmtk.product.model`: the reachable product states;
* :mod:`rmtk.product.planning`: MaxEnt (soft) optimal policies on the product;
* :mod:`rmtk.product.simulate`: demonstrations simulated from a product policy.

The names of :mod:`rmtk.product.model` are read here too (``rmtk.product.X`` as before this folder held
several modules), imported on first use.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .model import (
        Product as Product,
    )
    from .model import (
        gather_rows as gather_rows,
    )
    from .model import (
        letter_map as letter_map,
    )
    from .model import (
        product as product,
    )
    from .model import (
        reachable_pairs as reachable_pairs,
    )
    from .model import (
        task_product as task_product,
    )

__getattr__, __dir__ = lazy_exports(__name__, {}, fallback=".model")

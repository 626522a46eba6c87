"""Machines in and out of rmtk as text and graphs.

:mod:`rmtk.io.dot`
    Transitions grouped into labelled edges, Graphviz DOT text, a networkx graph.
:mod:`rmtk.io.rmtext`
    The ``(u, u', 'formula', reward)`` text format of the ``reward_machines`` research code,
    read without ``eval`` and written back exactly.

Pictures are in :mod:`rmtk.io.draw`. Nothing is imported here, so ``import rmtk.io`` stays cheap.
"""

"""Alembic migrations of the results database (driven by :mod:`pebench.store.migrate`, never by an ini file).

Adding a column or table: change :mod:`pebench.store.schema`, add ``versions/NNNN_what.py`` with ``revision``,
``down_revision``, ``SAFE`` (True when the step only adds, so a writer may apply it on its own) and ``upgrade()``, and
set ``schema.HEAD_REVISION`` to it; ``tests/store/test_migrations.py`` checks that upgrading a database of every
earlier revision gives exactly the tables :mod:`~pebench.store.schema` declares.
"""

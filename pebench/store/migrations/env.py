"""Alembic's environment: migrations run on the connection :mod:`pebench.store.migrate` hands over, inside the
transaction (and the lock) it holds, so a half-done upgrade is rolled back as a whole."""

from alembic import context

from pebench.store.schema import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    transactional_ddl=True,
)
with context.begin_transaction():
    context.run_migrations()

"""Workers on a Postgres job queue (`JOB_QUEUE=on` with `DATABASE_URL`): tasks submitted through the
server or `main.py run --detach` become jobs (`queue`), taken by `main.py worker` processes (`worker`);
each job's events are kept in a table and announced with LISTEN/NOTIFY (`events`), so any server process
shows them; an approved action is recorded before it runs (`ledger`), so it never runs twice.

This package sits beside `server/` and `ui/`: it uses `agent/` and `browser/`, and nothing above it."""

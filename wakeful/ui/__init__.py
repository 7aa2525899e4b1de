"""``wakeful ui``: a local, read-only web console over the substrate — agents, wakes, each
model call's window and ledger, diffs of two windows, and cost — rendered on the server
(HTML and inline SVG; nothing is fetched from elsewhere)."""

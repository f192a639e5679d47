"""Jobs: named steps run in order under one lock (the nightly job, a plain index run)."""

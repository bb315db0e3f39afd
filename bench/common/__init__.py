"""What the benchmarks share: `loadgen` (open-loop HTTP/1.1 load), `peer_models` (the digits models of
the peer comparison, also served by some paper reproductions), `doc_plots` (plots drawn from output kept
in docs/img/) and `paths` (where the repository, its var/ and docs/img/ are)."""

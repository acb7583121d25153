"""``--profile``: where the time goes on both sides of a run. The client sampled by py-spy (Python, native and Rust
frames, the GIL), QuestDB by async-profiler (its JVM threads); their stacks in named buckets, a verdict on which
side is the bottleneck, flame graphs in the report."""

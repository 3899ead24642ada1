//! The seeded generator behind every random choice (initial centres and medoids, samples,
//! random features, data sets): ChaCha with 12 rounds from `rand_chacha`, whose output for a
//! seed is specified by the algorithm, so a seed gives the same draws with any later version
//! of `rand` and on any platform. (`rand::rngs::StdRng` is this generator today, but `rand`
//! reserves the right to change it between versions; `tests/seeded_stream.rs` pins results
//! so that a change of stream is noticed.)

/// The seeded generator; make one with `rand::SeedableRng::seed_from_u64`.
pub type SeededRng = rand_chacha::ChaCha12Rng;

//! The committed corpus replayed, and the seeds checked.

use super::*;
use std::path::PathBuf;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

/// Every file of the committed corpus (seeds, minimized finds, regression
/// inputs) goes through its target again: what the fuzzers found stays fixed.
#[test]
fn corpus_replays_without_panics() {
    // Fewer files than this means the corpus was lost or emptied.
    const MIN_FILES: usize = 5;
    for (name, run) in TARGETS {
        let dir = corpus_dir().join(name);
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                let data = std::fs::read(&path).unwrap();
                let r = std::panic::catch_unwind(|| run(&data));
                assert!(r.is_ok(), "{} panics", path.display());
                files += 1;
            }
        }
        assert!(
            files >= MIN_FILES,
            "{name}: only {files} corpus files replayed from {}",
            dir.display()
        );
    }
}

/// The seeds are valid encodings: each loads and passes the checks, and the
/// argument seeds parse (the regression inputs among them run without a panic).
#[test]
fn seeds_load() {
    let seeds = seeds();
    for (target, name, data) in &seeds {
        let (_, run) = TARGETS.iter().find(|(t, _)| t == target).unwrap();
        run(data);
        // Regression inputs among the seeds are refused encodings.
        if name.starts_with("regression-") {
            continue;
        }
        match *target {
            "rdb_bloom" => {
                let mut i = Input::new(data);
                assert!(load_payload::<BloomFilter, _>(&limits(), || i.buffer()).is_ok());
            }
            "rdb_cuckoo" => {
                let mut i = Input::new(data);
                assert!(load_payload::<CuckooFilter, _>(&limits(), || i.buffer()).is_ok());
            }
            _ => {}
        }
        assert!(!name.is_empty());
    }
    for t in [
        "rdb_bloom",
        "rdb_cuckoo",
        "bloom_chunks",
        "cuckoo_chunks",
        "rdb_redisbloom",
    ] {
        assert!(seeds.iter().filter(|s| s.0 == t).count() >= 5, "{t}");
    }
}

/// The committed seeds are what `seeds()` makes today, byte for byte: a
/// change of an encoding or of the generator that leaves the corpus behind
/// fails here (`write_seed_corpus` below rewrites them).
#[test]
fn committed_seeds_are_the_generators() {
    let mut stale = Vec::new();
    for (target, name, data) in seeds() {
        let path = corpus_dir().join(target).join(&name);
        if std::fs::read(&path).ok().as_deref() != Some(&data[..]) {
            stale.push(format!("{target}/{name}"));
        }
    }
    assert!(
        stale.is_empty(),
        "{} committed seeds differ from the generator's (run `cargo test --release --lib \
         write_seed_corpus -- --ignored` and commit fuzz/corpus): {}",
        stale.len(),
        stale.join(", ")
    );
}

/// Writes the seeds into `fuzz/corpus/<target>/` (run by hand:
/// `cargo test --release --lib write_seed_corpus -- --ignored`).
#[test]
#[ignore]
fn write_seed_corpus() {
    for (target, name, data) in seeds() {
        let dir = corpus_dir().join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), data).unwrap();
    }
}

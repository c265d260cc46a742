//! The core's public API end to end, without a server: build two filters with
//! the server's parameters, add and look up items in batches, merge them, dump
//! the result to SCANDUMP chunks and load it back, and write and read the file
//! format. `cargo run --release -p ferrobloom-core --example local_filter`.

use ferrobloom_core::api::{load_chunks, Scandump, LOAD_LIMITS, SERVER_DEFAULT_LIMITS};
use ferrobloom_core::bloom::{BloomChain, BloomLayout, ChainOptions};
use ferrobloom_core::file;
use ferrobloom_core::filter::BloomFilter;

fn build(prefix: &str) -> Result<BloomFilter, String> {
    // BF.RESERVE key 0.01 100000 (ferrobloom's default classic layout).
    let limits = SERVER_DEFAULT_LIMITS;
    let chain = BloomChain::with_options(
        100_000,
        0.01,
        2,
        BloomLayout::Classic,
        ChainOptions::default(),
        &limits,
    )
    .map_err(|e| format!("{e:?}"))?;
    let mut f = BloomFilter::from(chain);
    let items: Vec<String> = (0..50_000).map(|i| format!("{prefix}{i}")).collect();
    // BF.MADD key item...: one answer per item.
    let added = f.add_items(items.iter().map(|s| s.as_bytes()), 0, &limits);
    let new = added.iter().filter(|r| matches!(r, Ok(true))).count();
    println!("{prefix}: {new} of {} items new", items.len());
    Ok(f)
}

fn main() -> Result<(), String> {
    let (a, b) = (build("a")?, build("b")?);
    // BF.MERGE dest a b: a new filter holding both.
    let merged =
        BloomFilter::merged(&[&a, &b], &SERVER_DEFAULT_LIMITS).map_err(|e| format!("{e:?}"))?;
    // BF.MEXISTS key ...
    let probes = ["a1", "b2", "c3"];
    let found = merged.contains_items(probes.iter().map(|s| s.as_bytes()), 0);
    println!("merged: {probes:?} -> {found:?}");

    // BF.SCANDUMP: (1, header), then the data chunks with their iterators.
    let mut chunks: Vec<(i64, Vec<u8>)> = Vec::new();
    merged.for_each_dump_chunk(|i, d| chunks.push((i, d.to_vec())));
    let borrowed: Vec<(i64, &[u8])> = chunks.iter().map(|(i, d)| (*i, &d[..])).collect();
    // BF.LOADCHUNK each of them into a missing key, in-process.
    let copy: BloomFilter = load_chunks(&borrowed, &LOAD_LIMITS)?;
    assert_eq!(
        copy.contains_items(probes.iter().map(|s| s.as_bytes()), 0),
        found
    );

    // The file format: the same chunks in a checksummed framing.
    let mut bytes = Vec::new();
    file::write(&copy, &mut bytes)?;
    let back: BloomFilter = file::read(&bytes, &LOAD_LIMITS)?;
    println!(
        "{} chunks, file of {} bytes, {} items, {} bytes in memory",
        chunks.len(),
        bytes.len(),
        back.items(),
        back.mem_usage()
    );
    Ok(())
}

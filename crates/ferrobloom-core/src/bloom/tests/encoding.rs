//! Headers and SCANDUMP / LOADCHUNK chunks of ferrobloom's own layouts.

use super::*;

#[test]
fn header_round_trip_and_scandump_load_chunk() {
    let limits = Limits::default();
    let mut c = BloomChain::new(1000, 0.01, 2, &limits).unwrap();
    for i in 0..5000 {
        c.add(&h(&format!("item{i}")), &limits).unwrap();
    }
    let header = c.encode_header();
    let mut d = BloomChain::from_header(&header, &limits).unwrap();
    assert_eq!(d.encode_header(), header);
    let mut iter = 1;
    let mut chunks = 0;
    while let Some((next, data)) = c.scandump_chunk(iter) {
        d.load_chunk(next, data).unwrap();
        iter = next;
        chunks += 1;
    }
    assert_eq!(chunks, c.links().len(), "small links come back whole");
    for (a, b) in c.links().iter().zip(d.links()) {
        assert_eq!(a.data(), b.data());
    }
    for i in 0..5000 {
        assert!(d.contains(&h(&format!("item{i}"))));
    }
    assert_eq!(d.items(), c.items());
    assert!(c.scandump_chunk(0).is_none());
    assert!(c.scandump_chunk(-5).is_none());
    assert!(c.scandump_chunk(i64::MAX).is_none());
}

#[test]
fn scandump_splits_links_larger_than_a_chunk() {
    // 20M entries at 1% (scaling, 0.5%): ~27.6 MB, two chunks.
    let limits = Limits::default();
    let mut c = BloomChain::new(20_000_000, 0.01, 2, &limits).unwrap();
    for i in 0..1000 {
        c.add(&h(&format!("big{i}")), &limits).unwrap();
    }
    let mut d = BloomChain::from_header(&c.encode_header(), &limits).unwrap();
    let mut iter = 1;
    let mut lens = vec![];
    while let Some((next, data)) = c.scandump_chunk(iter) {
        lens.push(data.len() as u64);
        d.load_chunk(next, data).unwrap();
        iter = next;
    }
    let total = c.links()[0].shape().bytes();
    assert_eq!(lens, vec![SCANDUMP_CHUNK, total - SCANDUMP_CHUNK]);
    assert!(c.links()[0].data() == d.links()[0].data());
    for i in 0..1000 {
        assert!(d.contains(&h(&format!("big{i}"))));
    }
}

#[test]
fn load_chunk_rejects_bad_chunks() {
    let limits = Limits::default();
    let mut c = BloomChain::new(100, 0.01, 2, &limits).unwrap(); // 144 bytes
                                                                 // As RedisBloom 2.8: an empty chunk inside a link loads nothing, one past
                                                                 // the end has no link; an iterator equal to the length ends before byte 1.
    let before = c.links()[0].data().to_vec();
    assert_eq!(c.load_chunk(10, &[]), Ok(()));
    assert!(c.links()[0].data() == &before[..]);
    assert_eq!(c.load_chunk(145, &[]), Err(BloomError::NoLinkForOffset));
    assert_eq!(c.load_chunk(0, &[]), Err(BloomError::BadChunk));
    assert_eq!(c.load_chunk(0, &[1]), Err(BloomError::BadChunk));
    assert_eq!(c.load_chunk(-1, &[1]), Err(BloomError::BadChunk));
    assert_eq!(c.load_chunk(2, &[1, 2, 3]), Err(BloomError::BadChunk));
    assert_eq!(
        c.load_chunk(3, &[1, 2, 3]),
        Err(BloomError::NoLinkForOffset)
    );
    assert_eq!(
        c.load_chunk(146, &[1]),
        Err(BloomError::NoLinkForOffset),
        "offset 144 is past the only link"
    );
    assert_eq!(
        c.load_chunk(i64::MAX, &[1]),
        Err(BloomError::NoLinkForOffset)
    );
    assert_eq!(c.load_chunk(146, &[1, 2]), Err(BloomError::ChunkTooBig));
    assert_eq!(c.load_chunk(145, &[7; 144]), Ok(()));
    assert_eq!(c.links()[0].data(), &[7u8; 144][..]);
}

#[test]
fn from_header_rejects_corruption() {
    let limits = Limits::default();
    let mut c = BloomChain::new(100, 0.01, 2, &limits).unwrap();
    for i in 0..300 {
        c.add(&h(&i.to_string()), &limits).unwrap();
    }
    let good = c.encode_header();
    assert!(BloomChain::from_header(&good, &limits).is_ok());
    // Truncations and extensions.
    for n in 0..good.len() {
        assert!(
            BloomChain::from_header(&good[..n], &limits).is_err(),
            "len {n}"
        );
    }
    let mut longer = good.clone();
    longer.push(0);
    assert!(BloomChain::from_header(&longer, &limits).is_err());
    // Field-by-field corruption.
    let patch = |off: usize, bytes: &[u8]| {
        let mut b = good.clone();
        b[off..off + bytes.len()].copy_from_slice(bytes);
        BloomChain::from_header(&b, &limits)
    };
    assert!(patch(0, b"XXXX").is_err(), "magic");
    assert!(patch(4, &[2]).is_err(), "version");
    assert!(patch(5, &[1]).is_err(), "reserved");
    assert!(patch(8, &0u64.to_le_bytes()).is_err(), "total != sum");
    assert!(patch(16, &40000u32.to_le_bytes()).is_err(), "expansion");
    assert!(
        patch(16, &0u32.to_le_bytes()).is_err(),
        "non-scaling with links"
    );
    assert!(patch(20, &0u32.to_le_bytes()).is_err(), "zero links");
    assert!(
        patch(20, &u32::MAX.to_le_bytes()).is_err(),
        "huge link count"
    );
    let l = 24; // first link record
    assert!(patch(l, &0u64.to_le_bytes()).is_err(), "entries 0");
    assert!(
        patch(l + 8, &u64::MAX.to_le_bytes()).is_err(),
        "items > entries"
    );
    assert!(
        patch(l + 16, &1.5f64.to_bits().to_le_bytes()).is_err(),
        "error"
    );
    assert!(
        patch(l + 16, &f64::NAN.to_bits().to_le_bytes()).is_err(),
        "nan"
    );
    assert!(patch(l + 24, &0u64.to_le_bytes()).is_err(), "bits 0");
    assert!(patch(l + 24, &100u64.to_le_bytes()).is_err(), "bits % 64");
    assert_eq!(
        patch(l + 24, &(1u64 << 61).to_le_bytes()).err(),
        Some(BloomError::MemoryCap),
        "2^61 bits must be refused before allocating"
    );
    assert!(patch(l + 32, &0u32.to_le_bytes()).is_err(), "hashes 0");
    assert!(patch(l + 32, &500u32.to_le_bytes()).is_err(), "hashes huge");
    assert!(patch(l + 36, &[1]).is_err(), "layout");
    assert!(patch(l + 37, &[1]).is_err(), "reserved in link");
}

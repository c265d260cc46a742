//! Bloom filters through DUMP/RESTORE (new keys, other servers) and the SCANDUMP/LOADCHUNK
//! round trip.

use super::*;

// ---------------------------------------------------------------------------------------------
// 5. DUMP / RESTORE
// ---------------------------------------------------------------------------------------------

#[test]
fn dump_restore_into_new_keys_and_other_servers() {
    let s = Server::start();
    let other = Server::start();
    let mut con = s.conn();
    let mut ocon = other.conn();
    let fs = build_filters(&mut con, true);
    let snap = snapshot(&mut con, &fs);

    for f in &fs.list {
        let payload = dump(&mut con, &f.key);
        let mut dst = b"restored:".to_vec();
        dst.extend_from_slice(&f.key);
        assert_eq!(restore(&mut con, &dst, &payload).ok(), Some(Value::Okay));
        assert_same_key(&mut con, &f.key, &dst, &f.items, "RESTORE");
        // The same payload on another server.
        assert_eq!(restore(&mut ocon, &f.key, &payload).ok(), Some(Value::Okay));
        assert_same_filter(
            &mut con,
            &f.key,
            &mut ocon,
            &f.key,
            &f.items,
            "RESTORE elsewhere",
        );
        // An existing key needs REPLACE.
        assert_eq!(
            err_text(restore(&mut con, &dst, &payload)),
            "BUSYKEY Target key name already exists."
        );
    }

    // ferrobloom's previous encoding (version 5, before the hash scheme was recorded)
    // still loads, and answers as the filter it was saved from.
    config_set(&mut con, "rdbcompression", "no");
    let mut v5 = 0;
    for f in &fs.list {
        let Some(payload) = as_version5(&dump(&mut con, &f.key)) else {
            continue;
        };
        let dst = [b"v5:".as_slice(), &f.key].concat();
        assert_eq!(restore(&mut con, &dst, &payload).ok(), Some(Value::Okay));
        assert_same_key(&mut con, &f.key, &dst, &f.items, "RESTORE of version 5");
        v5 += 1;
    }
    assert!(v5 >= 3, "{v5} filters went through version 5");

    // RESTORE ... REPLACE over another filter and over a string.
    let payload = dump(&mut con, EXP1);
    let r: Value = redis::cmd("RESTORE")
        .arg(b"restored:fs:scaling")
        .arg(0)
        .arg(&payload)
        .arg("REPLACE")
        .query(&mut con)
        .unwrap();
    assert_eq!(r, Value::Okay);
    assert_same_key(
        &mut con,
        EXP1,
        b"restored:fs:scaling",
        &fs.list[3].items,
        "REPLACE",
    );
    ok(&mut con, &[b"SET", b"str", b"v"]);
    let r: Value = redis::cmd("RESTORE")
        .arg(b"str")
        .arg(0)
        .arg(&payload)
        .arg("REPLACE")
        .query(&mut con)
        .unwrap();
    assert_eq!(r, Value::Okay);
    assert_same_key(
        &mut con,
        EXP1,
        b"str",
        &fs.list[3].items,
        "REPLACE over a string",
    );

    // With a TTL (the digest of a volatile key includes the expire: compare after PERSIST).
    let r: Value = redis::cmd("RESTORE")
        .arg(b"with-ttl")
        .arg(100_000)
        .arg(&payload)
        .query(&mut con)
        .unwrap();
    assert_eq!(r, Value::Okay);
    let pttl: i64 = q(&mut con, &[b"PTTL", b"with-ttl"]);
    assert!(pttl > 0 && pttl <= 100_000, "PTTL {pttl}");
    assert_eq!(q::<i64>(&mut con, &[b"PERSIST", b"with-ttl"]), 1);
    assert_same_key(
        &mut con,
        EXP1,
        b"with-ttl",
        &fs.list[3].items,
        "RESTORE with TTL",
    );

    // Uncompressed payloads restore to the same filter.
    config_set(&mut con, "rdbcompression", "no");
    let raw = dump(&mut con, SCALING);
    ModulePayload::parse(&raw);
    assert_eq!(restore(&mut ocon, b"raw", &raw).ok(), Some(Value::Okay));
    assert_same_filter(
        &mut con,
        SCALING,
        &mut ocon,
        b"raw",
        &fs.list[0].items,
        "raw DUMP",
    );

    assert_restored(&mut con, &fs, &snap, "sources after DUMP");
}

// ---------------------------------------------------------------------------------------------
// 6. SCANDUMP / LOADCHUNK
// ---------------------------------------------------------------------------------------------

/// The data chunk lengths SCANDUMP must produce for links of these sizes.
fn expected_chunk_lens(links: &[u64]) -> Vec<usize> {
    let mut out = Vec::new();
    for &b in links {
        let mut left = b;
        while left > 0 {
            let n = left.min(CHUNK);
            out.push(n as usize);
            left -= n;
        }
    }
    out
}

#[test]
fn scandump_loadchunk_round_trip() {
    let s = Server::start();
    let other = Server::start();
    let mut con = s.conn();
    let mut ocon = other.conn();
    let fs = build_filters(&mut con, true);
    let snap = snapshot(&mut con, &fs);

    for f in &fs.list {
        let what = format!(
            "SCANDUMP/LOADCHUNK of {:?}",
            String::from_utf8_lossy(&f.key)
        );
        let chunks = scandump(&mut con, &f.key);
        let links = link_bytes(&mut con, &f.key);

        // Header first, then chunks that never span links, at most 16 MiB each.
        assert_eq!(chunks[0].0, 1, "{what}");
        let header = &chunks[0].1;
        assert_eq!(&header[..4], b"FBbf");
        // Header version 2 (valkey-bloom's TIGHTENING / SEED) has 48 more bytes.
        let v2 = if f.key == TIGHT || f.key == SEEDED {
            48
        } else {
            0
        };
        assert_eq!(header[4], if v2 == 0 { 1 } else { 2 }, "{what}");
        assert_eq!(header.len(), H_FIXED + v2 + H_LINK * links.len(), "{what}");
        let lens: Vec<usize> = chunks[1..].iter().map(|c| c.1.len()).collect();
        assert_eq!(lens, expected_chunk_lens(&links), "{what}");
        let mut it = 1i64;
        for (next, data) in &chunks[1..] {
            assert_eq!(*next, it + data.len() as i64, "{what}: iterator");
            it = *next;
        }
        // Past the end: [0, ""].
        let (z, data): (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
            .arg(&f.key)
            .arg(it)
            .query(&mut con)
            .unwrap();
        assert_eq!((z, data.len()), (0, 0));

        // In order, into a new key.
        let mut dst = b"loaded:".to_vec();
        dst.extend_from_slice(&f.key);
        loadchunks(&mut con, &dst, &chunks);
        assert_same_key(&mut con, &f.key, &dst, &f.items, &what);

        // Data chunks in reverse order (they are positional), into another server.
        let mut reversed = vec![chunks[0].clone()];
        reversed.extend(chunks[1..].iter().rev().cloned());
        loadchunks(&mut ocon, &f.key, &reversed);
        assert_same_filter(&mut con, &f.key, &mut ocon, &f.key, &f.items, &what);
    }

    // The big filter: one link, two chunks of 16 MiB and the rest.
    let links = link_bytes(&mut con, BIG);
    let chunks = scandump(&mut con, BIG);
    assert_eq!(chunks.len(), 3);
    assert_eq!(chunks[1].1.len(), 16_777_216);
    assert_eq!(chunks[2].1.len() as u64, links[0] - CHUNK);
    assert_eq!(chunks[1].0, 1 + 16_777_216);

    // Smaller pieces at arbitrary positions work too (a chunk is any byte range of
    // one link): load the multi-link scaling filter in 1000-byte pieces, shuffled.
    let chunks = scandump(&mut con, SCALING);
    let mut pieces: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut offset = 0i64;
    for (_, data) in &chunks[1..] {
        for p in data.chunks(1000) {
            offset += p.len() as i64;
            pieces.push((offset + 1, p.to_vec()));
        }
    }
    // A deterministic shuffle: odd positions first, then even ones, backwards.
    let mut order: Vec<usize> = (0..pieces.len()).filter(|i| i % 2 == 1).collect();
    order.extend((0..pieces.len()).filter(|i| i % 2 == 0).rev());
    let mut shuffled = vec![chunks[0].clone()];
    shuffled.extend(order.iter().map(|&i| pieces[i].clone()));
    loadchunks(&mut con, b"pieces", &shuffled);
    assert_same_key(
        &mut con,
        SCALING,
        b"pieces",
        &fs.list[0].items,
        "1000-byte pieces",
    );

    // A header alone gives an empty filter of the same shape.
    loadchunks(&mut con, b"shape-only", &chunks[..1]);
    assert_eq!(
        bf_debug(&mut con, b"shape-only"),
        bf_debug(&mut con, SCALING)
    );
    assert_eq!(
        mexists(&mut con, b"shape-only", &fs.list[0].items[..100]),
        vec![0; 100]
    );

    assert_restored(&mut con, &fs, &snap, "sources after SCANDUMP");
}

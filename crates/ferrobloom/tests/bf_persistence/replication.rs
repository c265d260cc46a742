//! Bloom filters through replication: the initial full sync, streamed writes, and the
//! primary's expansion default on a replica.

use super::*;

// ---------------------------------------------------------------------------------------------
// 7. Replication
// ---------------------------------------------------------------------------------------------

#[test]
fn replica_full_sync_and_streamed_writes() {
    let primary = Server::start();
    let mut con = primary.conn();
    let mut fs = build_filters(&mut con, true);

    // Non-default creation defaults on the primary only (the replica keeps defaults).
    config_set(&mut con, "bf.bf-error-rate", "0.05");
    config_set(&mut con, "bf.bf-initial-size", "33");
    config_set(&mut con, "bf.bf-expansion-factor", "3");
    let items = text_items("pre-sync-auto:", 80);
    madd(&mut con, b"pre:auto", &items);
    fs.push(b"pre:auto", items);

    // Initial full sync.
    let replica = Server::start_replica_of(&primary);
    primary.wait_for_sync(&replica);
    assert_replica_matches(&primary, &replica, &fs, "full sync");
    let mut rcon = replica.conn();
    assert_eq!(config_get(&mut rcon, "bf.bf-error-rate"), "0.01");
    assert_eq!(config_get(&mut rcon, "bf.bf-initial-size"), "100");
    assert_eq!(config_get(&mut rcon, "bf.bf-expansion-factor"), "2");

    // Streamed writes: every write command.
    reserve(&mut con, b"w:reserve", &["0.02", "70", "EXPANSION", "3"]);
    reserve(&mut con, b"w:reserve-ns", &["0.003", "40", "NONSCALING"]);
    reserve(
        &mut con,
        b"w:reserve-exp0",
        &["0.01", "40", "EXPANSION", "0"],
    );
    assert_eq!(q::<i64>(&mut con, &[b"BF.ADD", b"w:reserve", b"one"]), 1);
    let mut items = vec![b"one".to_vec()];
    let more = text_items("w-reserve:", 400);
    madd(&mut con, b"w:reserve", &more);
    items.extend(more);
    fs.push(b"w:reserve", items);

    let items = text_items("w-ns:", 40);
    madd(&mut con, b"w:reserve-ns", &items);
    // Full: the next new item is refused and nothing is replicated for it.
    let r = q_array(
        &mut con,
        &[b"BF.MADD", b"w:reserve-ns", b"w-ns:0", b"overflow-1", b"x"],
    );
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(
        value_err_text(&r[1]).as_deref(),
        Some("ERR non scaling filter is full")
    );
    fs.push(b"w:reserve-ns", items);
    fs.push(b"w:reserve-exp0", Vec::new());

    let items = text_items("w-insert:", 300);
    insert(
        &mut con,
        b"w:insert",
        &["CAPACITY", "40", "ERROR", "0.03", "EXPANSION", "2"],
        &items,
    );
    fs.push(b"w:insert", items);
    let items = binary_items();
    insert(
        &mut con,
        b"w:insert-ns",
        &["NONSCALING", "CAPACITY", "300"],
        &items,
    );
    fs.push(b"w:insert-ns", items);
    let more = text_items("w-nocreate:", 100);
    insert(&mut con, b"w:insert", &["NOCREATE"], &more);
    fs.get_mut(b"w:insert").items.extend(more);
    assert_eq!(
        err_text(
            redis::cmd("BF.INSERT")
                .arg("w:missing")
                .arg("NOCREATE")
                .arg("ITEMS")
                .arg("a")
                .query::<Value>(&mut con)
        ),
        "ERR not found"
    );

    // LOADCHUNK into a new key.
    let chunks = scandump(&mut con, SCALING);
    loadchunks(&mut con, b"w:loaded", &chunks);
    fs.push(b"w:loaded", fs.list[0].items.clone());
    let chunks = scandump(&mut con, BIG);
    loadchunks(&mut con, b"w:loaded-big", &chunks);
    fs.push(b"w:loaded-big", fs.list[7].items.clone());

    // Auto-creation with the primary's non-default configs (error 0.05, 33, 3).
    assert_eq!(q::<i64>(&mut con, &[b"BF.ADD", b"w:auto-add", b"a"]), 1);
    fs.push(b"w:auto-add", vec![b"a".to_vec()]);
    let items = text_items("w-auto-madd:", 200);
    madd(&mut con, b"w:auto-madd", &items);
    fs.push(b"w:auto-madd", items);
    let items = text_items("w-auto-insert:", 50);
    insert(&mut con, b"w:auto-insert", &[], &items);
    fs.push(b"w:auto-insert", items);
    let items = text_items("w-auto-insert-cap:", 50);
    insert(&mut con, b"w:auto-insert-cap", &["CAPACITY", "20"], &items);
    fs.push(b"w:auto-insert-cap", items);
    config_set(&mut con, "bf.bf-expansion-factor", "0");
    let items = text_items("w-auto-ns:", 20);
    madd(&mut con, b"w:auto-ns", &items);
    fs.push(b"w:auto-ns", items);
    assert_eq!(
        bf_debug(&mut con, b"w:auto-add")[1],
        "bytes:32 bits:256 hashes:6 hashwidth:64 capacity:33 size:1 ratio:0.025"
    );

    // More items into existing filters (new links on both sides), COPY, RESTORE, DEL.
    let more = text_items("w-scaling-more:", 2000);
    madd(&mut con, SCALING, &more);
    fs.get_mut(SCALING).items.extend(more);
    assert_eq!(q::<i64>(&mut con, &[b"COPY", EXP1, b"w:copy"]), 1);
    fs.push(b"w:copy", fs.list[3].items.clone());
    let payload = dump(&mut con, INSERTED);
    assert_eq!(
        restore(&mut con, b"w:restored", &payload).ok(),
        Some(Value::Okay)
    );
    fs.push(b"w:restored", fs.list[4].items.clone());
    ok(&mut con, &[b"SET", b"w:deleted", b"x"]);
    assert_eq!(q::<i64>(&mut con, &[b"DEL", b"w:deleted"]), 1);

    // Auto-creation inside MULTI/EXEC and inside a Lua script (config defaults still
    // 0.05 / 33, expansion now 0: non-scaling).
    config_set(&mut con, "bf.bf-expansion-factor", "3");
    let items = text_items("w-multi:", 40);
    let mut tx = redis::pipe();
    tx.atomic()
        .cmd("BF.ADD")
        .arg("w:multi-add")
        .arg(&items[0])
        .cmd("BF.MADD")
        .arg("w:multi-madd")
        .arg(&items[1..]);
    let _: Value = tx.query(&mut con).expect("MULTI/EXEC");
    fs.push(b"w:multi-add", items[..1].to_vec());
    fs.push(b"w:multi-madd", items[1..].to_vec());
    let items = text_items("w-lua:", 60);
    let _: Value = redis::cmd("EVAL")
        .arg("for i = 1, #ARGV do redis.call('BF.ADD', KEYS[1], ARGV[i]) end return 1")
        .arg(1)
        .arg("w:lua")
        .arg(&items)
        .query(&mut con)
        .expect("EVAL");
    fs.push(b"w:lua", items);

    assert_replica_matches(&primary, &replica, &fs, "streamed writes");
    let mut rcon = replica.conn();
    let d = bf_debug(&mut rcon, b"w:auto-madd");
    assert!(
        d[1].contains("capacity:33") && d[1].contains("ratio:0.025"),
        "{d:?}"
    );
    assert!(d.len() >= 3, "{d:?}");
    assert_eq!(
        bf_info_field(&mut rcon, b"w:auto-ns", "EXPANSION"),
        Value::Nil
    );
    assert_eq!(
        bf_info_field(&mut rcon, b"w:auto-madd", "EXPANSION"),
        Value::Int(3)
    );
}

/// BF.RESERVE without EXPANSION takes the expansion from `bf-expansion-factor`; a
/// replica with another default must build the same filter.
#[test]
fn replica_of_reserve_keeps_the_primary_expansion_default() {
    let primary = Server::start();
    let replica = Server::start_replica_of(&primary);
    primary.wait_for_sync(&replica);
    let mut con = primary.conn();
    let items = reserve_under_changed_expansion(&mut con);
    // The layout comes from bf.bf-layout on the primary; the replica keeps classic.
    config_set(&mut con, "bf.bf-layout", "blocked");
    config_set(&mut con, "bf.bf-expansion-factor", "2");
    let blocked = text_items("rb:", 300);
    madd(&mut con, b"r:blocked", &blocked);
    assert!(bf_debug(&mut con, b"r:blocked")[1].ends_with("layout:blocked"));
    assert_eq!(config_get(&mut replica.conn(), "bf.bf-layout"), "classic");
    let mut fs = Filters::default();
    fs.push(b"r:exp4", items);
    fs.push(b"r:ns", Vec::new());
    fs.push(b"r:blocked", blocked);
    assert_replica_matches(
        &primary,
        &replica,
        &fs,
        "BF.RESERVE with a defaulted expansion",
    );
}

//! Runs the README's examples against a real server, so the README cannot drift
//! from what the module does: the redis-cli session is replayed command by
//! command through `redis-cli --no-raw` and every output line compared, and the
//! Python block runs under redis-py (its asserts are the checks).

mod common;

use common::*;

const README: &str = include_str!("../../../README.md");

/// Every fenced block that follows a `<!-- readme-test: <kind>` marker.
fn blocks(kind: &str) -> Vec<&'static str> {
    let marker = format!("<!-- readme-test: {kind}");
    let found: Vec<&'static str> = README
        .match_indices(&marker)
        .map(|(start, _)| {
            let rest = &README[start..];
            let open = rest.find("```").expect("fence") + 3;
            let body_start = open + rest[open..].find('\n').expect("fence line") + 1;
            let body_len = rest[body_start..].find("```").expect("closing fence");
            &rest[body_start..body_start + body_len]
        })
        .collect();
    assert!(!found.is_empty(), "README has no {marker}");
    found
}

#[test]
fn readme_redis_cli_sessions_replay_exactly() {
    for block in blocks("redis-cli") {
        replay(block);
    }
}

fn replay(block: &str) {
    let server = Server::start();
    let mut commands = 0;
    let mut current: Option<(String, Vec<String>)> = None;
    let check = |cmd: &str, expected: &[String]| {
        let args: Vec<&str> = cmd.split_whitespace().collect();
        let mut cli_args = vec!["--no-raw"];
        cli_args.extend(&args);
        let out = server.cli(&cli_args);
        let got: Vec<&str> = out.lines().map(str::trim).collect();
        let want: Vec<&str> = expected.iter().map(|l| l.trim()).collect();
        assert_eq!(got, want, "README command `{cmd}`");
    };
    for line in block.lines() {
        if let Some(cmd) = line
            .split_once("> ")
            .filter(|(p, _)| p.starts_with("127.0.0.1:"))
        {
            if let Some((c, exp)) = current.take() {
                check(&c, &exp);
                commands += 1;
            }
            current = Some((cmd.1.to_string(), Vec::new()));
        } else if let Some((_, exp)) = current.as_mut() {
            exp.push(line.to_string());
        }
    }
    if let Some((c, exp)) = current.take() {
        check(&c, &exp);
        commands += 1;
    }
    assert!(commands >= 5, "the session should not be empty");
}

#[test]
fn readme_python_sessions_run() {
    for block in blocks("python") {
        let server = Server::start();
        let out = server.python(block, &[]);
        assert!(
            out.status.success() && out.stdout.trim() == "ok",
            "README python block failed:\nstdout: {}\nstderr: {}",
            out.stdout,
            out.stderr
        );
    }
}

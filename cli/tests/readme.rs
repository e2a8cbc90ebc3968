//! The README as a newcomer reads it: the plan author's quick start run
//! command by command exactly as written, from `tessera init` in an empty
//! directory (on a host of its own, so the
//! default ports are free), and every `tessera` command and flag the README
//! and `docs/` show checked against the command's `--help`.
// Every test binary links all of the package's dependencies.
#![allow(unused_crate_dependencies)]

mod support;

use std::{
    collections::{BTreeMap, BTreeSet},
    io::BufRead,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::Duration,
};

use support::hosts::Hosts;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// The lines of the first fenced block after `marker` in the README.
fn block_after(marker: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let at = readme.find(marker).unwrap_or_else(|| panic!("README has no {marker}"));
    let rest = &readme[at..];
    let open = rest.find("```").expect("a fenced block after the marker");
    let body = &rest[open..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let end = body.find("```").expect("the block closes");
    body[..end].lines().map(str::to_owned).collect()
}

/// A line without its trailing comment (`   # …`).
fn command_of(line: &str) -> String {
    let cut = line.find(" # ").map_or(line, |i| &line[..i]);
    cut.trim().to_owned()
}

/// A long-running command of the quick start, stopped as Ctrl-C would.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let _ = self.0.wait();
    }
}

/// What a long-running command prints once it is up.
fn ready_line(command: &str) -> Option<&'static str> {
    [("tessera chain", "anvil on http://"), ("tessera serve", "orchestrator on http://")]
        .into_iter()
        .chain([("tessera worker", "watching for tasks")])
        .find(|(word, _)| command.contains(word))
        .map(|(_, ready)| ready)
}

#[test]
fn the_plan_authors_quick_start_runs_as_written() {
    let hosts = Hosts::new(&["newcomer"]);
    if let Err(why) = hosts.isolated() {
        println!(
            "the quick start shares this machine's loopback ({why}): ports 8545 and 8080 must be free"
        );
    }
    // An empty directory: `tessera init` writes what the quick start reads.
    let home = tempfile::tempdir().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_tessera")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    // A newcomer's shell: nothing of ours set but what the README exports.
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    let shell = |env: &BTreeMap<String, String>, command: &str| {
        let mut cmd = hosts.command("newcomer", "bash");
        // bash runs a lone command in its own place: a signal reaches it.
        cmd.args(["-c", command]).current_dir(home.path()).env("PATH", &path);
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("TESSERA_")) {
            if k != "TESSERA_ANVIL" {
                cmd.env_remove(k);
            }
        }
        cmd.env_remove("RUST_BACKTRACE").env_remove("DATABASE_URL").envs(env);
        cmd
    };
    let mut running = Vec::new();
    let mut outputs: Vec<(String, String)> = Vec::new();
    let mut id = None::<String>;
    for line in block_after("<!-- quick-start: plan-author -->") {
        let command = command_of(&line);
        if command.is_empty() {
            continue;
        }
        if let Some(vars) = command.strip_prefix("export ") {
            for pair in vars.split_whitespace() {
                let (k, v) = pair.split_once('=').expect("export K=V");
                env.insert(k.to_owned(), v.to_owned());
            }
            continue;
        }
        let command = match &id {
            Some(id) => command.replace("<id>", id),
            None => command,
        };
        if let Some(ready) = ready_line(&command) {
            let mut child = shell(&env, &command).stdout(Stdio::piped()).spawn().unwrap();
            let stdout = child.stdout.take().unwrap();
            running.push(Running(child));
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                for l in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                    if l.contains(ready) {
                        let _ = tx.send(());
                    }
                }
            });
            rx.recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|_| panic!("`{command}` never said {ready:?}"));
            continue;
        }
        assert!(!command.contains('<'), "a placeholder left in `{command}`");
        let out = shell(&env, &format!("timeout 300 {command}")).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "`{command}` failed:\n{stdout}\n{stderr}");
        if id.is_none() && command.starts_with("tessera plan") {
            let at = stdout.find("0x").expect("the plan's id");
            id = Some(stdout[at..at + 66].to_owned());
        }
        outputs.push((command, stdout));
    }
    let said = |word: &str| {
        outputs
            .iter()
            .find(|(c, _)| c.starts_with(word))
            .map(|(_, out)| out.clone())
            .unwrap_or_else(|| panic!("the quick start never ran `{word}`"))
    };
    let id = id.expect("a plan was proposed");
    // What init wrote is the repository's examples, byte for byte.
    for file in ["workers/cards/translator.yaml", "examples/translate-then-summarize.json"] {
        assert_eq!(
            std::fs::read(home.path().join(file)).unwrap(),
            std::fs::read(repo().join(file)).unwrap(),
            "{file}"
        );
    }
    assert!(said("tessera plan").contains("plan_completed"), "{}", said("tessera plan"));
    assert!(said("tessera runs list").contains(&format!("{id}  completed")));
    assert_eq!(
        said("tessera runs show").matches(" paid ").count(),
        2,
        "{}",
        said("tessera runs show")
    );
    assert_eq!(
        said("tessera tasks tree").matches("Paid").count(),
        2,
        "{}",
        said("tessera tasks tree")
    );
    drop(running);
}

/// The subcommands `tessera <path> --help` lists.
fn subcommands(path: &[String]) -> Vec<String> {
    let help = help_of(path);
    let Some(at) = help.find("Commands:") else { return Vec::new() };
    help[at..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A name at two spaces; a description's continuation is deeper.
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| *w != "help" && !w.starts_with('-'))
        .map(str::to_owned)
        .collect()
}

fn help_of(path: &[String]) -> String {
    let out =
        Command::new(env!("CARGO_BIN_EXE_tessera")).args(path).arg("--help").output().unwrap();
    assert!(out.status.success(), "tessera {path:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// Every `tessera …` command line in the fenced blocks of `text`, joined
/// across `\` continuations, without comments.
fn tessera_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if !fence {
            // Commands quoted inline: `tessera runs show <id>`, `… --flag`.
            for span in line.split('`').skip(1).step_by(2) {
                if let Some(at) = span.find("tessera ") {
                    let before = &span[..at];
                    if before.is_empty() || before.ends_with(' ') {
                        out.push(span[at..].trim().to_owned());
                    }
                }
            }
            continue;
        }
        let line = command_of(line);
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(&line);
        let whole = std::mem::take(&mut pending);
        // Every `tessera` invocation on it (after env assignments, `|`, `;`).
        for part in whole.split(['|', ';', '&']) {
            if let Some(at) = part.find("tessera ") {
                let before = &part[..at];
                if before.is_empty() || before.ends_with(' ') {
                    out.push(part[at..].trim().to_owned());
                }
            }
        }
    }
    out
}

#[test]
fn every_command_and_flag_the_docs_show_is_in_its_help() {
    let mut docs = vec![repo().join("README.md")];
    for entry in std::fs::read_dir(repo().join("docs")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "md") {
            docs.push(p);
        }
    }
    let mut tree: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let subs = subcommands(&path);
        for s in &subs {
            let mut next = path.clone();
            next.push(s.clone());
            todo.push(next);
        }
        tree.insert(path, subs);
    }
    let mut helps: BTreeMap<Vec<String>, String> = BTreeMap::new();
    let mut shown: BTreeSet<String> = BTreeSet::new();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        for line in tessera_lines(&text) {
            let words: Vec<&str> = line.split_whitespace().skip(1).collect();
            let mut path: Vec<String> = Vec::new();
            for w in &words {
                if tree.get(&path).is_some_and(|subs| subs.iter().any(|s| s == w)) {
                    path.push((*w).to_owned());
                } else {
                    break;
                }
            }
            if path.is_empty() {
                continue;
            }
            shown.insert(path[0].clone());
            let help = helps.entry(path.clone()).or_insert_with(|| help_of(&path));
            for flag in words.iter().filter(|w| w.starts_with("--")) {
                let flag = flag.split('=').next().unwrap();
                checked += 1;
                let listed =
                    help.lines().any(|l| l.split([' ', ',', '<', '[', '=']).any(|tok| tok == flag));
                if !listed {
                    wrong.push(format!(
                        "{}: `tessera {}` has no {flag} ({line})",
                        doc.display(),
                        path.join(" ")
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "flags the docs show that --help does not:\n{}", wrong.join("\n"));
    assert!(checked > 40, "only {checked} flags found: the scan is broken");
    let missing: Vec<_> =
        tree[&Vec::new()].iter().filter(|c| !shown.contains(*c)).cloned().collect();
    assert!(missing.is_empty(), "commands --help lists that no document shows: {missing:?}");
}

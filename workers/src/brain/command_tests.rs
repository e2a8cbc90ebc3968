//! A command handler: scripts in a temporary directory, run with the
//! request on stdin; every way one can fail is declined with its reason.

use serde_json::json;

use super::*;
use crate::brain::{Verdict, think, wire::tests::request};

fn sh(script: &str) -> CommandBrain {
    CommandBrain::new(vec!["sh".into(), "-c".into(), script.into()], None)
}

async fn verdict(brain: &CommandBrain, timeout_ms: u64) -> Verdict {
    let mut req = request();
    req.limits.timeout_ms = timeout_ms;
    think(brain, &req).await
}

fn declined(v: Verdict) -> String {
    match v {
        Verdict::Decline(reason) => reason,
        other => panic!("a decline: {other:?}"),
    }
}

#[tokio::test]
async fn a_script_beside_the_card_reads_the_request_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agent.py"),
        "import json, os, sys\n\
         req = json.load(sys.stdin)\n\
         print(json.dumps({'result': {'haiku': 'for ' + req['task']['id'], 'cwd': os.getcwd(), \
         'key': os.environ.get('TESSERA_WORKER_KEY')}}))\n",
    )
    .unwrap();
    let brain = CommandBrain::new(vec!["python3".into(), "agent.py".into()], Some(dir.path()));
    let home = dir.path().canonicalize().unwrap();
    assert_eq!(brain.argv()[0], "python3", "a program on the PATH stays as it is");
    assert_eq!(
        brain.argv()[1],
        home.join("agent.py").to_string_lossy(),
        "resolved beside the card"
    );
    let Verdict::Deliver(result) = verdict(&brain, 10_000).await else { panic!("a result") };
    assert_eq!(result["haiku"], "for 1234");
    assert_eq!(result["cwd"], home.to_string_lossy().as_ref(), "run in the card's directory");
    assert_eq!(result["key"], Value::Null, "the worker's key is not passed on");
    assert!(brain.describe().contains("agent.py"));
}

#[tokio::test]
async fn a_handler_past_its_timeout_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let brain = sh(&format!("echo $$ > {}; exec sleep 30", pid_file.display()));
    let started = std::time::Instant::now();
    assert_eq!(declined(verdict(&brain, 1000).await), "handler timed out after 1 s");
    assert!(started.elapsed() < Duration::from_secs(5), "gave up on time");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let proc = Path::new("/proc").join(pid.trim());
    assert!(!proc.exists(), "process {} still runs", pid.trim());
}

#[tokio::test]
async fn failures_and_bad_answers_are_declined_with_their_reason() {
    let garbage = declined(verdict(&sh("cat > /dev/null; echo not json"), 10_000).await);
    assert!(
        garbage.starts_with("handler answered off-schema: the answer is not JSON"),
        "{garbage}"
    );
    let exit = declined(verdict(&sh("echo 'secret detail' >&2; exit 3"), 10_000).await);
    assert_eq!(exit, "handler failed: exit status 3", "stderr stays in the log");
    let big = declined(verdict(&sh("head -c 300000 /dev/zero | tr '\\0' x"), 10_000).await);
    assert_eq!(big, "handler answered off-schema: the answer is over 262144 bytes");
    let off = declined(verdict(&sh(r#"echo '{"result": {"lines": 3}}'"#), 10_000).await);
    assert_eq!(
        off,
        "handler answered off-schema: the result field .haiku: is required and missing"
    );
    let no = declined(verdict(&sh(r#"echo '{"decline": {"reason": "not today"}}'"#), 10_000).await);
    assert_eq!(no, "handler declined: not today", "an answer without reading stdin is fine");
    let missing = CommandBrain::new(vec!["./no-such-agent".into()], None);
    let gone = declined(verdict(&missing, 10_000).await);
    assert!(gone.starts_with("handler failed: the command cannot start"), "{gone}");
    let hire = sh(
        r#"cat > /dev/null; echo '{"hire": [{"capability": "translate", "spec": "To French: hi"}]}'"#,
    );
    let Verdict::Hire(hires) = verdict(&hire, 10_000).await else { panic!("a hire") };
    assert_eq!(hires[0].capability, "translate");
    let _ = json!(null);
}

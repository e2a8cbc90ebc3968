//! GraphQL over an index folded from encoded escrow and registry events (the
//! contracts' own event types), on SQLite and PostgreSQL: every type, every
//! task filter, cursor pages, the bounds a hostile query meets, and the
//! routes (explorer under a prefix, queries, subscriptions as events).

use alloy::{
    primitives::{Address, B256, LogData, U256, aliases::U40, keccak256},
    rpc::types::Log,
    sol_types::SolEvent,
};
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tessera_bindings::{
    AgentRegistry as R, TaskEscrow as E, capability,
    card::{AgentCard, CapabilityOffer, Price, Role},
    envelope::{Envelope, EnvelopeCodec, MemoryBlobStore, Parent, percent_data_uri},
};
use tessera_http::limits::{HttpLimits, StreamGate};
use tokio::sync::{broadcast, watch};
use tower::ServiceExt;

use super::{IndexSchema, schema};
use crate::{
    ingest::{Progress, Update},
    store::{Batch, IndexStore},
};

const SPONSOR: Address = Address::repeat_byte(0x02);
const POET: Address = Address::repeat_byte(0xb1);
const RATER: Address = Address::repeat_byte(0xb2);
const STRANGER: Address = Address::repeat_byte(0x09);
const ARBITER: Address = Address::repeat_byte(0xa1);
const APPEALS: Address = Address::repeat_byte(0xa2);

fn at(data: LogData, block: u64, index: u64) -> Log {
    Log {
        inner: alloy::primitives::Log { address: Address::repeat_byte(1), data },
        block_number: Some(block),
        log_index: Some(index),
        transaction_hash: Some(tx(block)),
        ..Log::default()
    }
}

/// The transaction of the logs of `block`.
fn tx(block: u64) -> B256 {
    keccak256(block.to_be_bytes())
}

fn plan_id() -> B256 {
    keccak256("graphql")
}

fn poet_card() -> String {
    AgentCard {
        id: "poet".into(),
        description: "Haiku on demand.".into(),
        role: Role::Executor,
        capabilities: vec![CapabilityOffer::new("haiku-write", Price::from_base_units(50_000))],
        model: "handler".into(),
        instructions: String::new(),
        publish_instructions: false,
        delegates: Vec::new(),
        max_delegated_outstanding: None,
        handler: None,
    }
    .to_uri()
}

/// A task of the plan: id, parent, funder, executor, amount, capability,
/// path, groups, block (its creation time is `1000 + block`).
#[allow(clippy::too_many_arguments)]
fn created(
    id: u64,
    parent: u64,
    funder: Address,
    executor: Address,
    amount: u128,
    cap: &str,
    path: Option<&str>,
    groups: &[&str],
    block: u64,
) -> Log {
    let mut env = Envelope::new(
        if parent == 0 { Parent::Plan(plan_id()) } else { Parent::Task(parent.to_string()) },
        format!("step {id}"),
    );
    env.path = path.map(str::to_owned);
    env.groups = groups.iter().map(|g| (*g).to_owned()).collect();
    let uri = EnvelopeCodec::default().encode(&env, &MemoryBlobStore::new()).unwrap();
    let mut ev = crate::testkit::task_created(id, plan_id(), cap, funder, executor, amount, &uri);
    ev.parentId = U256::from(parent);
    ev.task.deadline = U40::from(100_000);
    ev.task.updatedAt = U40::from(1_000 + block);
    ev.task.appealWindow = 600;
    at(ev.encode_log_data(), block, 0)
}

/// The index under test: two agents (the poet with a card and an offer;
/// the rater paused),
/// a nested plan of the sponsor's (10: `0`; 11: `1.0` in "research"; 12
/// under 11: `1.1.0` in "research" / "deeper"; 13 under 12: `1.1.1`), a
/// stranger's task under 10 (foreign), task 10 disputed, ruled, appealed
/// and ruled again (split 60/40), task 11 approved rated 80, and task 40 taken away by
/// a reorganisation.
async fn indexed(store: &IndexStore) {
    let id = U256::from;
    let result = percent_data_uri(br#"{"answer":42}"#);
    let reason = "data:text/plain,too%20short".to_owned();
    let rationale = percent_data_uri(br#"{"why":"partly done"}"#);
    let logs = vec![
        at(R::AgentRegistered { agent: POET, metadataURI: poet_card() }.encode_log_data(), 1, 1),
        at(
            R::CapabilitySet {
                agent: POET,
                capability: capability::encode("haiku-write").unwrap(),
                price: 50_000,
            }
            .encode_log_data(),
            1,
            2,
        ),
        at(
            R::AgentRegistered { agent: RATER, metadataURI: "data:,not a card".into() }
                .encode_log_data(),
            1,
            3,
        ),
        at(R::AgentPaused { agent: RATER }.encode_log_data(), 1, 4),
        created(10, 0, SPONSOR, POET, 100_000, "haiku-write", Some("0"), &[], 2),
        created(11, 0, SPONSOR, RATER, 200_000, "translate", Some("1.0"), &["research"], 3),
        created(
            12,
            11,
            SPONSOR,
            RATER,
            300_000,
            "translate",
            Some("1.1.0"),
            &["research", "deeper"],
            4,
        ),
        created(
            13,
            12,
            SPONSOR,
            POET,
            400_000,
            "haiku-write",
            Some("1.1.1"),
            &["research", "deeper"],
            5,
        ),
        created(30, 10, STRANGER, POET, 1_000, "haiku-write", None, &[], 6),
        at(
            E::TaskAccepted { taskId: id(10), executor: POET, at: U40::from(1_010) }
                .encode_log_data(),
            7,
            0,
        ),
        at(
            E::TaskCompleted {
                taskId: id(10),
                executor: POET,
                resultURI: result,
                at: U40::from(1_020),
            }
            .encode_log_data(),
            7,
            1,
        ),
        at(
            E::TaskDisputed {
                taskId: id(10),
                client: SPONSOR,
                reasonURI: reason,
                at: U40::from(1_030),
            }
            .encode_log_data(),
            8,
            0,
        ),
        at(
            E::DisputeRuled {
                taskId: id(10),
                arbiter: ARBITER,
                executorShareBps: 3_000,
                rationaleURI: rationale.clone(),
                at: U40::from(1_040),
            }
            .encode_log_data(),
            9,
            0,
        ),
        at(
            E::RulingAppealed {
                taskId: id(10),
                appellant: POET,
                reasonURI: "sha256:abcd".into(),
                at: U40::from(1_050),
            }
            .encode_log_data(),
            10,
            0,
        ),
        at(
            E::AppealRuled {
                taskId: id(10),
                appealArbiter: APPEALS,
                executorShareBps: 6_000,
                rationaleURI: rationale,
                at: U40::from(1_060),
            }
            .encode_log_data(),
            11,
            0,
        ),
        at(
            E::TaskSettled {
                taskId: id(10),
                status: 9,
                settlement: 3,
                executorAmount: 60_000,
                funderAmount: 40_000,
                rating: 0,
                at: U40::from(1_060),
            }
            .encode_log_data(),
            11,
            1,
        ),
        at(
            E::TaskAccepted { taskId: id(11), executor: RATER, at: U40::from(1_011) }
                .encode_log_data(),
            12,
            0,
        ),
        at(
            E::TaskCompleted {
                taskId: id(11),
                executor: RATER,
                resultURI: "sha256:ff".into(),
                at: U40::from(1_021),
            }
            .encode_log_data(),
            12,
            1,
        ),
        at(
            E::TaskSettled {
                taskId: id(11),
                status: 7,
                settlement: 0,
                executorAmount: 200_000,
                funderAmount: 0,
                rating: 80,
                at: U40::from(1_031),
            }
            .encode_log_data(),
            13,
            0,
        ),
        created(40, 0, SPONSOR, POET, 5_000, "haiku-write", None, &[], 20),
    ];
    store.apply(&Batch { from: 1, to: 20, logs, ..Batch::default() }).await.unwrap();
    store.derive(None, 21).await.unwrap();
    let reorg = store.rollback(20, 21, None).await.unwrap();
    assert_eq!(reorg.affected_tasks, ["40"]);
}

fn schema_over(store: &IndexStore) -> (IndexSchema, broadcast::Sender<Update>) {
    let (_, progress) = watch::channel(Progress { head: 30, indexed: 19 });
    let updates = broadcast::channel(16).0;
    (schema(store.clone(), progress, updates.clone(), 12), updates)
}

/// `query`'s data; its errors fail the test.
async fn data(schema: &IndexSchema, query: &str) -> Value {
    let response = schema.execute(query).await;
    assert!(response.errors.is_empty(), "{query}: {:?}", response.errors);
    response.data.into_json().unwrap()
}

/// `query`'s error messages (it must have some).
async fn errors(schema: &IndexSchema, query: &str) -> Vec<String> {
    let response = schema.execute(query).await;
    assert!(!response.errors.is_empty(), "{query} answered without errors");
    response.errors.into_iter().map(|e| e.message).collect()
}

/// The ids of `tasks(filter: …)`.
async fn ids(schema: &IndexSchema, filter: &str) -> Vec<String> {
    let q = format!("{{ tasks(filter: {filter}) {{ nodes {{ id }} }} }}");
    let d = data(schema, &q).await;
    d["tasks"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn every_type_and_filter(store: IndexStore) {
    indexed(&store).await;
    let (schema, _) = schema_over(&store);
    let plan = plan_id().to_string();
    let (poet, rater, sponsor) = (POET.to_string(), RATER.to_string(), SPONSOR.to_string());

    // Status.
    let d = data(&schema, "{ status { head indexedBlock safeBlock reorgDepth events } }").await;
    assert_eq!(d["status"]["head"], 30);
    assert_eq!(d["status"]["indexedBlock"], 19);
    assert_eq!(d["status"]["safeBlock"], 18);
    assert_eq!(d["status"]["reorgDepth"], 12);
    assert_eq!(d["status"]["events"], store.event_count().await.unwrap());

    // Task: fields, decoded envelope and result with their hashes, history,
    // transactions, parent, children, dispute.
    let d = data(
        &schema,
        r#"{ task(id: "12") { id planId parentId funder executor amount status capability spec path groups
              createdBlock createdAt envelope { uri hash json text error }
              parent { id } children { nodes { id } } history { event } transactions { txHash } } }"#,
    )
    .await;
    let t = &d["task"];
    assert_eq!((t["id"].as_str(), t["parentId"].as_str()), (Some("12"), Some("11")));
    assert_eq!(t["planId"], plan.to_lowercase());
    assert_eq!(t["funder"], sponsor);
    assert_eq!(t["executor"], rater);
    assert_eq!(t["amount"], "300000");
    assert_eq!(t["status"], "Created");
    assert_eq!(t["capability"], "translate");
    assert_eq!(t["spec"], "step 12");
    assert_eq!(t["path"], "1.1.0");
    assert_eq!(t["groups"], json!(["research", "deeper"]));
    assert_eq!((t["createdBlock"].as_u64(), t["createdAt"].as_u64()), (Some(4), Some(1_004)));
    let env = &t["envelope"];
    let uri = env["uri"].as_str().unwrap();
    assert!(uri.starts_with("data:"), "{env}");
    assert_eq!(env["hash"], keccak256(uri.as_bytes()).to_string());
    assert_eq!(env["json"]["spec"], "step 12", "{env}");
    assert_eq!(env["json"]["path"], "1.1.0");
    assert_eq!((&env["text"], &env["error"]), (&Value::Null, &Value::Null));
    assert_eq!(t["parent"]["id"], "11");
    assert_eq!(t["children"]["nodes"], json!([{ "id": "13" }]));
    assert_eq!(t["history"], json!([{ "event": "TaskCreated" }]));
    assert_eq!(t["transactions"].as_array().unwrap().len(), 1);

    let d = data(
        &schema,
        r#"{ paid: task(id: "11") { status executorPaid rating result { uri hash json error } }
             split: task(id: "10") { status executorPaid disputed rating result { json hash } history { event valid } }
             gone: task(id: "40") { id } }"#,
    )
    .await;
    assert_eq!(d["paid"]["status"], "Paid");
    assert_eq!(d["paid"]["executorPaid"], "200000");
    assert_eq!(d["paid"]["rating"], 80, "the client's rating in its approval");
    assert_eq!(d["split"]["rating"], Value::Null, "a ruling carries none");
    assert_eq!(d["paid"]["result"]["uri"], "sha256:ff");
    assert_eq!(d["paid"]["result"]["hash"], keccak256("sha256:ff").to_string());
    assert_eq!(d["paid"]["result"]["json"], Value::Null);
    let why = d["paid"]["result"]["error"].as_str().unwrap();
    assert!(why.contains("sha256"), "a malformed content address says why: {why}");
    assert_eq!(d["split"]["status"], "Split");
    assert_eq!(d["split"]["executorPaid"], "60000");
    assert_eq!(d["split"]["disputed"], true);
    assert_eq!(d["split"]["result"]["json"], json!({ "answer": 42 }));
    let events: Vec<&str> = d["split"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        events,
        [
            "TaskCreated",
            "TaskAccepted",
            "TaskCompleted",
            "TaskDisputed",
            "DisputeRuled",
            "RulingAppealed",
            "AppealRuled",
            "TaskSettled"
        ]
    );
    assert!(d["split"]["history"].as_array().unwrap().iter().all(|h| h["valid"] == true));
    assert_eq!(d["gone"], Value::Null, "the reorganisation took task 40 away");

    // Every task filter.
    let all = ["10", "11", "12", "13", "30"];
    assert_eq!(ids(&schema, "{}").await, all);
    assert_eq!(ids(&schema, r#"{ status: ["Paid", "Split"] }"#).await, ["10", "11"]);
    assert_eq!(ids(&schema, r#"{ status: ["Created"] }"#).await, ["12", "13", "30"]);
    assert_eq!(ids(&schema, &format!(r#"{{ executor: "{poet}" }}"#)).await, ["10", "13", "30"]);
    assert_eq!(
        ids(&schema, &format!(r#"{{ executor: "{}" }}"#, rater.to_lowercase())).await,
        ["11", "12"],
        "addresses match without case"
    );
    assert_eq!(ids(&schema, &format!(r#"{{ client: "{STRANGER}" }}"#)).await, ["30"]);
    assert_eq!(
        ids(&schema, &format!(r#"{{ funder: "{sponsor}" }}"#)).await,
        ["10", "11", "12", "13"]
    );
    assert_eq!(
        ids(&schema, &format!(r#"{{ plan: "{}" }}"#, plan.to_uppercase().replace("0X", "0x")))
            .await,
        all
    );
    assert_eq!(
        ids(&schema, &format!(r#"{{ plan: "0x{}" }}"#, "ab".repeat(32))).await,
        Vec::<String>::new()
    );
    assert_eq!(ids(&schema, r#"{ parent: "0" }"#).await, ["10", "11"]);
    assert_eq!(ids(&schema, r#"{ parent: "10" }"#).await, ["30"]);
    assert_eq!(ids(&schema, r#"{ capability: "translate" }"#).await, ["11", "12"]);
    assert_eq!(ids(&schema, "{ createdBlockFrom: 4 }").await, ["12", "13", "30"]);
    assert_eq!(ids(&schema, "{ createdBlockTo: 3 }").await, ["10", "11"]);
    assert_eq!(ids(&schema, "{ createdBlockFrom: 3, createdBlockTo: 4 }").await, ["11", "12"]);
    assert_eq!(ids(&schema, "{ createdAtFrom: 1005 }").await, ["13", "30"]);
    assert_eq!(ids(&schema, "{ createdAtTo: 1002 }").await, ["10"]);
    assert_eq!(ids(&schema, "{ disputed: true }").await, ["10"]);
    assert_eq!(ids(&schema, "{ disputed: false }").await, ["11", "12", "13", "30"]);
    assert_eq!(ids(&schema, "{ ratingBelow: 100 }").await, ["11"]);
    assert_eq!(ids(&schema, "{ ratingBelow: 80 }").await, Vec::<String>::new());
    assert_eq!(
        ids(
            &schema,
            &format!(r#"{{ executor: "{poet}", status: ["Created"], createdBlockTo: 5 }}"#)
        )
        .await,
        ["13"],
        "filters combine"
    );

    // Cursor pages: two, two, one, with the cursors in the edges.
    let mut seen = Vec::new();
    let mut after = String::new();
    for expected in [2, 2, 1] {
        let d = data(
            &schema,
            &format!(
                r#"{{ tasks(first: 2, after: "{after}") {{ edges {{ cursor node {{ id }} }} pageInfo {{ hasNextPage endCursor }} }} }}"#
            ),
        )
        .await;
        let edges = d["tasks"]["edges"].as_array().unwrap();
        assert_eq!(edges.len(), expected, "{d}");
        for e in edges {
            assert_eq!(e["cursor"], e["node"]["id"]);
            seen.push(e["node"]["id"].as_str().unwrap().to_owned());
        }
        let info = &d["tasks"]["pageInfo"];
        assert_eq!(info["hasNextPage"], expected == 2, "{d}");
        after = info["endCursor"].as_str().unwrap_or_default().to_owned();
    }
    assert_eq!(seen, all);

    // Plan: the tree by roots and children, every node, nested plans,
    // foreign tasks, cost.
    let d = data(
        &schema,
        &format!(
            r#"{{ plan(id: "{plan}") {{ id sponsor cost truncated foreignTruncated
                 roots {{ task {{ id path }} depth subtreeCost children {{ task {{ id }} children {{ task {{ id }} depth children {{ task {{ id }} }} }} }} }}
                 tasks {{ task {{ id }} depth merge inputs pendingParent detached }}
                 nestedPlans {{ label groups taskIds cost }}
                 foreign {{ id funder }} }} }}"#
        ),
    )
    .await;
    let p = &d["plan"];
    assert_eq!(p["id"], plan.to_lowercase());
    assert_eq!(p["sponsor"], sponsor);
    assert_eq!(p["cost"], "1000000");
    assert_eq!(
        (p["truncated"].as_bool(), p["foreignTruncated"].as_bool()),
        (Some(false), Some(false))
    );
    assert_eq!(
        p["roots"],
        json!([
            { "task": { "id": "10", "path": "0" }, "depth": 0, "subtreeCost": "100000", "children": [] },
            { "task": { "id": "11", "path": "1.0" }, "depth": 0, "subtreeCost": "900000", "children": [
                { "task": { "id": "12" }, "children": [
                    { "task": { "id": "13" }, "depth": 2, "children": [] } ] } ] },
        ]),
        "{p}"
    );
    let depths: Vec<(String, i64)> = p["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["task"]["id"].as_str().unwrap().to_owned(), n["depth"].as_i64().unwrap()))
        .collect();
    assert_eq!(depths, [("10".into(), 0), ("11".into(), 0), ("12".into(), 1), ("13".into(), 2)]);
    assert_eq!(
        p["nestedPlans"],
        json!([
            { "label": "research", "groups": ["research"], "taskIds": ["11", "12", "13"], "cost": "900000" },
            { "label": "deeper", "groups": ["research", "deeper"], "taskIds": ["12", "13"], "cost": "700000" },
        ])
    );
    assert_eq!(p["foreign"], json!([{ "id": "30", "funder": STRANGER.to_string() }]));
    let d = data(
        &schema,
        &format!(r#"{{ plan(id: "0x{}") {{ sponsor tasks {{ depth }} }} }}"#, "cd".repeat(32)),
    )
    .await;
    assert_eq!(d["plan"], json!({ "sponsor": null, "tasks": [] }), "an unknown plan is empty");

    // Agent: record, weight, identity, feedback, card, offers, its tasks;
    // the same numbers the REST view gives.
    let d = data(
        &schema,
        &format!(
            r#"{{ agent(address: "{poet}") {{ address status name registeredBlock card {{ json error }}
                 offers {{ capability price }}
                 record {{ tasks completed disputed refunded expired declined earnings successRate }}
                 weight {{ completed failed settled funders linkedFunders belowFloor }}
                 identity {{ agentId }} feedback {{ count matched average latest {{ value }} }}
                 tasks(status: ["Created"]) {{ nodes {{ id }} }} }} }}"#
        ),
    )
    .await;
    let a = &d["agent"];
    let rest = store.agent(&poet).await.unwrap().unwrap();
    assert_eq!(a["address"], poet);
    assert_eq!((a["status"].as_str(), a["name"].as_str()), (Some("active"), Some("poet")));
    assert_eq!(a["registeredBlock"], 1);
    assert_eq!(a["card"]["json"]["id"], "poet", "{a}");
    assert_eq!(a["offers"], json!([{ "capability": "haiku-write", "price": "50000" }]));
    assert_eq!(a["record"]["tasks"], rest.stats.tasks);
    assert_eq!(a["record"]["tasks"], 3);
    assert_eq!(a["record"]["completed"], 1, "the split counts as completed");
    assert_eq!(a["record"]["disputed"], 1);
    assert_eq!(a["record"]["earnings"], "60000");
    assert_eq!(a["record"]["successRate"], json!(rest.stats.success_rate));
    let w = &a["weight"];
    let e = &rest.stats.evidence;
    assert_eq!(
        (
            w["completed"].as_f64(),
            w["failed"].as_f64(),
            w["funders"].as_u64(),
            w["belowFloor"].as_u64()
        ),
        (Some(e.completed), Some(e.failed), Some(e.funders), Some(e.below_floor))
    );
    assert_eq!(w["settled"].as_f64(), Some(e.settled()));
    assert_eq!(a["identity"], Value::Null, "no ERC-8004 identity linked");
    assert_eq!(a["feedback"], json!({ "count": 0, "matched": 0, "average": null, "latest": [] }));
    assert_eq!(a["tasks"]["nodes"], json!([{ "id": "13" }, { "id": "30" }]));
    let d =
        data(&schema, &format!(r#"{{ agent(address: "{RATER}") {{ name card {{ text }} }} }}"#))
            .await;
    assert_eq!(d["agent"], json!({ "name": null, "card": { "text": "not a card" } }), "{d}");
    assert_eq!(
        data(&schema, &format!(r#"{{ agent(address: "{STRANGER}") {{ address }} }}"#)).await["agent"],
        Value::Null
    );

    // Agents, by address, paged.
    let d = data(
        &schema,
        "{ agents(first: 1) { nodes { address } pageInfo { hasNextPage endCursor } } }",
    )
    .await;
    let (first, second) = if POET < RATER { (&poet, &rater) } else { (&rater, &poet) };
    assert_eq!(d["agents"]["nodes"], json!([{ "address": first }]));
    assert_eq!(d["agents"]["pageInfo"], json!({ "hasNextPage": true, "endCursor": first }));
    let d = data(&schema, &format!(r#"{{ agents(first: 5, after: "{first}") {{ nodes {{ address }} pageInfo {{ hasNextPage }} }} }}"#)).await;
    assert_eq!(d["agents"]["nodes"], json!([{ "address": second }]));
    assert_eq!(d["agents"]["pageInfo"]["hasNextPage"], false);

    // Agents by status: a paused agent is listed apart.
    let d = data(&schema, r#"{ active: agents(status: "active") { nodes { address } } paused: agents(status: "paused") { nodes { address } } }"#).await;
    assert_eq!(d["active"]["nodes"], json!([{ "address": poet }]), "{d}");
    assert_eq!(d["paused"]["nodes"], json!([{ "address": rater }]), "{d}");
    let e = errors(&schema, r#"{ agents(status: "asleep") { nodes { address } } }"#).await;
    assert!(e[0].contains("\"asleep\" is not an agent status"), "{e:?}");

    // Capabilities: the catalogue, one by name, those an agent offers.
    let d = data(&schema, "{ capabilities { name builtin offeredBy } }").await;
    let names: Vec<&str> =
        d["capabilities"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"haiku-write") && names.contains(&"sentiment-classify"), "{names:?}");
    let d = data(
        &schema,
        &format!(
            r#"{{ one: capabilities(name: "haiku-write") {{ name builtin offeredBy describe offerers {{ agent card price settled completed reliability }} }}
                 mine: capabilities(offeredBy: "{poet}") {{ name }} }}"#
        ),
    )
    .await;
    let c = &d["one"][0];
    assert_eq!(d["one"].as_array().unwrap().len(), 1);
    assert_eq!(
        (c["name"].as_str(), c["builtin"].as_bool(), c["offeredBy"].as_u64()),
        (Some("haiku-write"), Some(false), Some(1))
    );
    assert!(c["describe"].is_object(), "{c}");
    assert_eq!(c["offerers"][0]["agent"], poet);
    assert_eq!(c["offerers"][0]["card"], "poet");
    assert_eq!(c["offerers"][0]["price"], "50000");
    assert_eq!(d["mine"], json!([{ "name": "haiku-write" }]));

    // Disputes: the dispute, ruling, appeal, appeal ruling, verdict and
    // shares, rationale decoded; filtered as tasks are.
    let d = data(
        &schema,
        r#"{ disputes { nodes { status executorPaid task { id }
              opened { by reason { text json } at block }
              ruling { arbiter executorShareBps clientShareBps rationale { json } at block txHash }
              appeal { by reason { uri error } at }
              appealRuling { arbiter executorShareBps clientShareBps }
              verdict { executorShareBps } } pageInfo { hasNextPage } } }"#,
    )
    .await;
    let n = &d["disputes"]["nodes"];
    assert_eq!(n.as_array().unwrap().len(), 1, "{d}");
    let x = &n[0];
    assert_eq!((x["status"].as_str(), x["executorPaid"].as_str()), (Some("Split"), Some("60000")));
    assert_eq!(x["task"]["id"], "10");
    assert_eq!(
        x["opened"],
        json!({ "by": sponsor, "reason": { "text": "too short", "json": null }, "at": 1_030, "block": 8 })
    );
    let r = &x["ruling"];
    assert_eq!(
        (r["arbiter"].as_str(), r["executorShareBps"].as_u64(), r["clientShareBps"].as_u64()),
        (Some(ARBITER.to_string().as_str()), Some(3_000), Some(7_000))
    );
    assert_eq!(r["rationale"]["json"], json!({ "why": "partly done" }));
    assert_eq!((r["at"].as_u64(), r["block"].as_u64()), (Some(1_040), Some(9)));
    assert_eq!(r["txHash"], tx(9).to_string());
    assert_eq!(x["appeal"]["by"], poet);
    assert_eq!(x["appeal"]["reason"]["uri"], "sha256:abcd");
    assert_eq!(
        x["appealRuling"],
        json!({ "arbiter": APPEALS.to_string(), "executorShareBps": 6_000, "clientShareBps": 4_000 })
    );
    assert_eq!(x["verdict"]["executorShareBps"], 6_000, "the appeal's ruling stands");
    assert_eq!(
        data(
            &schema,
            &format!(
                r#"{{ disputes(filter: {{ executor: "{rater}" }}) {{ nodes {{ status }} }} }}"#
            )
        )
        .await["disputes"]["nodes"],
        json!([])
    );
    let d = data(&schema, r#"{ task(id: "10") { dispute { verdict { executorShareBps } } } other: task(id: "11") { dispute { status } } }"#).await;
    assert_eq!(d["task"]["dispute"]["verdict"]["executorShareBps"], 6_000);
    assert_eq!(d["other"]["dispute"], Value::Null);

    // Reorgs.
    let d = data(
        &schema,
        "{ reorgs { seq detectedHead forkBlock depth orphanedEvents affectedTasks } }",
    )
    .await;
    let r = &d["reorgs"][0];
    assert_eq!(d["reorgs"].as_array().unwrap().len(), 1);
    assert_eq!(
        (r["forkBlock"].as_u64(), r["detectedHead"].as_u64(), r["orphanedEvents"].as_u64()),
        (Some(20), Some(21), Some(1))
    );
    assert_eq!(r["affectedTasks"], json!(["40"]));

    // Bad arguments are clear errors.
    for (q, needle) in [
        (
            r#"{ tasks(filter: { status: ["Lost"] }) { nodes { id } } }"#,
            "\"Lost\" is not a task status",
        ),
        (
            r#"{ tasks(filter: { executor: "0x12" }) { nodes { id } } }"#,
            "executor \"0x12\" is not an address",
        ),
        (r#"{ tasks(filter: { plan: "ab" }) { nodes { id } } }"#, "is not a plan id"),
        (r#"{ tasks(after: "x") { nodes { id } } }"#, "is not a cursor"),
        (r#"{ tasks(first: 0) { nodes { id } } }"#, "first: 0 is not within 1..=500"),
        (r#"{ task(id: "abc") { id } }"#, "is not a task id"),
        (r#"{ agent(address: "nobody") { address } }"#, "is not an address"),
    ] {
        let e = errors(&schema, q).await;
        assert!(e.iter().any(|m| m.contains(needle)), "{q}: {e:?}");
    }
}

#[tokio::test]
async fn every_type_and_filter_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("index.db").display());
    every_type_and_filter(IndexStore::connect(&url).await.unwrap()).await;
}

#[tokio::test]
async fn every_type_and_filter_on_postgresql() {
    let Some(url) = tessera_db::test_utils::scratch_postgres_url("indexer_graphql").await else {
        return;
    };
    let store = IndexStore::connect(&url).await.unwrap();
    assert_eq!(store.backend(), tessera_db::Backend::Postgres);
    every_type_and_filter(store).await;
}

/// Hostile queries meet a bound, with an error naming it, at once and
/// without touching the database.
#[tokio::test]
async fn hostile_queries_are_refused_fast_with_clear_errors() {
    let store = IndexStore::connect("sqlite::memory:").await.unwrap();
    indexed(&store).await;
    let (schema, _) = schema_over(&store);
    let deep =
        format!("{{ task(id: \"13\") {{ {} id {} }} }}", "parent { ".repeat(20), "}".repeat(20));
    let wide = format!(
        "{{ {} }}",
        (0..200)
            .map(|i| format!("a{i}: tasks(first: 500) {{ nodes {{ id status }} }}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let plans = format!(
        "{{ {} }}",
        (0..300)
            .map(|i| format!("p{i}: plan(id: \"{}\") {{ tasks {{ task {{ id }} }} }}", plan_id()))
            .collect::<Vec<_>>()
            .join(" ")
    );
    for (q, needle) in [
        (deep.as_str(), "Query is nested too deep"),
        (wide.as_str(), "Query is too complex"),
        (plans.as_str(), "Query is too complex"),
        (
            "{ tasks(first: 100000) { nodes { id } } }",
            "first: 100000 is not within 1..=500, the page limit",
        ),
        ("{ reorgs(first: 100000) { seq } }", "the page limit"),
        ("{ agents(first: 100000) { nodes { address } } }", "the page limit"),
    ] {
        let started = std::time::Instant::now();
        let e = errors(&schema, q).await;
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{needle}: slow");
        assert!(e.iter().any(|m| m.contains(needle)), "{needle}: {e:?}");
    }
    // Within the bounds, the same shapes answer.
    let d = data(&schema, "{ task(id: \"13\") { parent { parent { id } } } }").await;
    assert_eq!(d["task"]["parent"]["parent"]["id"], "11");
    data(&schema, "{ tasks(first: 500) { nodes { id status envelope { hash } } } }").await;
}

/// The router (nested as serve nests it): the explorer points at its own
/// path, queries answer over POST and GET, refusals are JSON, and a
/// subscription streams task changes as they are published.
#[tokio::test]
async fn the_routes_serve_the_explorer_queries_and_subscriptions() {
    let store = IndexStore::connect("sqlite::memory:").await.unwrap();
    indexed(&store).await;
    let (_, progress) = watch::channel(Progress::default());
    let updates = broadcast::channel(16).0;
    let gate = StreamGate::new(&HttpLimits::default());
    let api = crate::api::router(store, progress, updates.clone(), 12, gate);
    let app = axum::Router::new().nest("/index", api);
    let call = |req: Request<axum::body::Body>| {
        let app = app.clone();
        async move {
            let resp = app.oneshot(req).await.unwrap();
            let status = resp.status();
            let ct = resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned());
            let body = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
            (status, ct.unwrap_or_default(), String::from_utf8(body.to_vec()).unwrap())
        }
    };
    let get = |uri: &str| Request::get(uri).body(axum::body::Body::empty()).unwrap();
    let post = |uri: &str, body: String| {
        Request::post(uri)
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body))
            .unwrap()
    };

    let (status, ct, html) = call(get("/index/graphql")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(ct.starts_with("text/html"), "{ct}");
    assert!(html.contains("graphiql"), "the explorer");
    assert!(html.contains("'/index/graphql'"), "pointed at its own path under the prefix");

    let q = json!({ "query": "query T($id: String!) { task(id: $id) { id status } }", "variables": { "id": "11" } });
    let (status, _, body) = call(post("/index/graphql", q.to_string())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["data"]["task"],
        json!({ "id": "11", "status": "Paid" })
    );

    let (status, _, body) = call(get("/index/graphql?query=%7Bstatus%7BreorgDepth%7D%7D")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["data"]["status"]["reorgDepth"], 12);

    let (status, _, body) = call(post("/index/graphql", "{ not json".into())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]
            .as_str()
            .unwrap()
            .contains("not a GraphQL request")
    );
    let huge = json!({ "query": format!("{{ status {{ head }} }} #{}", "x".repeat(super::MAX_QUERY_BYTES)) });
    let (status, _, body) = call(post("/index/graphql", huge.to_string())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("more than the 65536 a query may have"), "{body}");
    let (status, _, body) = call(post(
        "/index/graphql",
        json!({ "query": "{ tasks(first: 100000) { nodes { id } } }" }).to_string(),
    ))
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("the page limit"), "{body}");
    let deep =
        format!("{{ task(id: \"13\") {{ {} id {} }} }}", "parent { ".repeat(20), "}".repeat(20));
    let (status, _, body) =
        call(post("/index/graphql", json!({ "query": deep }).to_string())).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("Query is nested too deep: more than 12 levels"), "{body}");
    // The REST API is still there beside it.
    let (status, _, _) = call(get("/index/api/tasks/11")).await;
    assert_eq!(status, StatusCode::OK);
    // A method the route does not take: JSON 405, as the REST routes answer.
    let put = Request::put("/index/graphql").body(axum::body::Body::empty()).unwrap();
    let (status, ct, body) = call(put).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(ct.starts_with("application/json"), "{ct}");
    assert!(body.contains("does not take PUT"), "{body}");

    // A subscription: the stream opens, a published change arrives as a
    // `next` event with the task as it stands.
    let sub = json!({ "query": format!(r#"subscription {{ taskUpdates(plan: "{}", status: ["Paid"]) {{ block task {{ id status }} }} }}"#, plan_id()) });
    let resp = app.clone().oneshot(post("/index/graphql/stream", sub.to_string())).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let mut body = resp.into_body().into_data_stream();
    let plan = plan_id().to_string();
    let publisher = tokio::spawn(async move {
        for _ in 0..50 {
            // Until the subscriber listens; 12 is not Paid and is filtered out.
            let _ = updates.send(Update {
                block: 19,
                tasks: vec![("12".into(), plan.clone()), ("11".into(), plan.clone())],
                reorg: None,
            });
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    });
    use futures_util::StreamExt;
    let mut seen = String::new();
    let found = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while let Some(chunk) = body.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            if seen.contains("event: next") && seen.contains("\"status\":\"Paid\"") {
                return true;
            }
        }
        false
    })
    .await;
    publisher.abort();
    assert_eq!(found, Ok(true), "{seen}");
    assert!(
        seen.contains(
            r#"{"data":{"taskUpdates":{"block":19,"task":{"id":"11","status":"Paid"}}}}"#
        ),
        "{seen}"
    );
    assert!(!seen.contains("\"id\":\"12\""), "filtered by status: {seen}");

    let (status, _, body) = call(get("/index/graphql/stream?query=%7Bnope%7D")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("event: next") && body.contains("Unknown field"), "{body}");
}

/// The subscriptions: task updates filtered by executor, reorganisations
/// as they are published; a bad filter is an error at once.
#[tokio::test]
async fn subscriptions_follow_the_updates_they_ask_for() {
    use futures_util::StreamExt;
    let store = IndexStore::connect("sqlite::memory:").await.unwrap();
    indexed(&store).await;
    let (schema, updates) = schema_over(&store);
    let mut tasks = schema.execute_stream(format!(
        r#"subscription {{ taskUpdates(executor: "{POET}") {{ block task {{ id executor }} }} }}"#
    ));
    let mut reorgs = schema.execute_stream("subscription { reorgs { forkBlock affectedTasks } }");
    let reorg = store.reorgs().await.unwrap().remove(0);
    let plan = plan_id().to_string();
    let publisher = tokio::spawn(async move {
        for _ in 0..100 {
            // Until both listen; task 11 is the rater's and is filtered out.
            let _ = updates.send(Update {
                block: 21,
                tasks: vec![("11".into(), plan.clone()), ("13".into(), plan.clone())],
                reorg: Some(reorg.clone()),
            });
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    });
    let wait = std::time::Duration::from_secs(5);
    let first = tokio::time::timeout(wait, tasks.next()).await.unwrap().unwrap();
    assert!(first.errors.is_empty(), "{:?}", first.errors);
    assert_eq!(
        first.data.into_json().unwrap(),
        json!({ "taskUpdates": { "block": 21, "task": { "id": "13", "executor": POET.to_string() } } })
    );
    let second = tokio::time::timeout(wait, tasks.next()).await.unwrap().unwrap();
    assert_eq!(second.data.into_json().unwrap()["taskUpdates"]["task"]["id"], "13", "11 never");
    let r = tokio::time::timeout(wait, reorgs.next()).await.unwrap().unwrap();
    assert_eq!(
        r.data.into_json().unwrap(),
        json!({ "reorgs": { "forkBlock": 20, "affectedTasks": ["40"] } })
    );
    publisher.abort();

    let mut bad =
        schema.execute_stream(r#"subscription { taskUpdates(status: ["Lost"]) { block } }"#);
    let e = tokio::time::timeout(wait, bad.next()).await.unwrap().unwrap();
    assert!(e.errors[0].message.contains("\"Lost\" is not a task status"), "{:?}", e.errors);
}

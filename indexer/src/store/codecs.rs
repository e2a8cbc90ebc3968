//! How the index's values are written to and read from their columns: task
//! ids as bytes, logs as `raw` bytes, histories as JSON text, amounts as
//! `BIGINT` or decimal text (never clamped), and column lists that drive
//! both an `INSERT`'s column names and its binds.

use alloy::sol_types::SolEventInterface;
use alloy::{
    primitives::{B256, U256},
    rpc::types::Log,
};
use sqlx::{
    Any, Row,
    any::{AnyArguments, AnyRow},
    query::Query,
};
use tessera_bindings::{task::decode_log, usdc::Usdc};
use tessera_db::{Backend, DbError};

use crate::{derive, store::rows::HistoryEntry};

/// A statement being bound.
pub(super) type AnyQuery<'q> = Query<'q, Any, AnyArguments<'q>>;

/// One value bound to a statement parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Param {
    /// `TEXT`.
    Text(String),
    /// `TEXT`, or `NULL`.
    OptText(Option<String>),
    /// `BIGINT`.
    Int(i64),
    /// `BIGINT`, or `NULL`.
    OptInt(Option<i64>),
    /// `BYTEA` (bytes of any declared type on SQLite).
    Bytes(Vec<u8>),
    /// `BYTEA`, or `NULL`.
    OptBytes(Option<Vec<u8>>),
}

impl Param {
    /// Binds the value as the statement's next parameter.
    pub(super) fn bind(self, q: AnyQuery<'_>) -> AnyQuery<'_> {
        match self {
            Param::Text(v) => q.bind(v),
            Param::OptText(v) => q.bind(v),
            Param::Int(v) => q.bind(v),
            Param::OptInt(v) => q.bind(v),
            Param::Bytes(v) => q.bind(v),
            Param::OptBytes(v) => q.bind(v),
        }
    }
}

/// How a row of type `R` gives one column's value.
pub(super) type ColumnValue<R> = fn(&R) -> Result<Param, DbError>;

/// A table's columns in order, each with how a row gives its value: the one
/// list an `INSERT`'s column names and its binds both come from.
#[derive(Debug)]
pub(super) struct Columns<R: 'static> {
    /// The table.
    pub(super) table: &'static str,
    /// Column names and values, in order.
    pub(super) columns: &'static [(&'static str, ColumnValue<R>)],
}

impl<R> Columns<R> {
    /// The column names, comma separated, each after `prefix`.
    pub(super) fn names(&self, prefix: &str) -> String {
        let names: Vec<String> = self.columns.iter().map(|(c, _)| format!("{prefix}{c}")).collect();
        names.join(", ")
    }

    /// `INSERT INTO table (columns) VALUES (…), …` for `rows` rows, then
    /// `tail` (a conflict clause).
    pub(super) fn insert(&self, backend: Backend, rows: usize, tail: &str) -> String {
        format!(
            "INSERT INTO {} ({}) VALUES {} {tail}",
            self.table,
            self.names(""),
            values(backend, rows, self.columns.len())
        )
    }

    /// `c = excluded.c` for every column but the first (the key).
    pub(super) fn updates(&self) -> String {
        let sets: Vec<String> =
            self.columns[1..].iter().map(|(c, _)| format!("{c} = excluded.{c}")).collect();
        sets.join(", ")
    }

    /// Binds every column of every row, in the order of [`Columns::insert`].
    pub(super) fn bind<'q>(
        &self,
        mut q: AnyQuery<'q>,
        rows: &[R],
    ) -> Result<AnyQuery<'q>, DbError> {
        for row in rows {
            for (_, value) in self.columns {
                q = value(row)?.bind(q);
            }
        }
        Ok(q)
    }
}

/// `($1, $2, …), …` groups for a multi-row statement of `rows` rows of
/// `cols` columns. SQLite gets anonymous `?` parameters: sqlx resolves
/// every named parameter through `sqlite3_bind_parameter_name`, a linear
/// scan, which makes binding a statement with thousands of `$N` quadratic.
pub(super) fn values(backend: Backend, rows: usize, cols: usize) -> String {
    let mut out = String::with_capacity(rows * (cols * 6 + 3));
    for r in 0..rows {
        if r > 0 {
            out.push(',');
        }
        out.push('(');
        for c in 0..cols {
            if c > 0 {
                out.push(',');
            }
            match backend {
                Backend::Sqlite => out.push('?'),
                Backend::Postgres => {
                    out.push('$');
                    out.push_str(&(r * cols + c + 1).to_string());
                }
            }
        }
        out.push(')');
    }
    out
}

/// An amount for a `BIGINT` column of `table`; an error past its range.
pub(super) fn amount_to_column(
    amount: Usdc,
    table: &'static str,
    column: &'static str,
) -> Result<i64, DbError> {
    amount.to_i64().map_err(|e| DbError::OutOfRange { table, column, source: Box::new(e) })
}

/// An amount read back from a `BIGINT` column of `table`.
pub(super) fn amount_from_column(value: i64, table: &'static str) -> Result<Usdc, DbError> {
    Usdc::from_i64(value).map_err(|e| DbError::Corrupt { table, detail: e.to_string() })
}

/// An amount read back from a decimal text column of `table` (base units).
pub(super) fn amount_from_text(text: &str, table: &'static str) -> Result<Usdc, DbError> {
    Usdc::parse_base_units(text).map_err(|e| DbError::Corrupt { table, detail: e.to_string() })
}

/// A block number or log index for a `BIGINT` column.
pub(super) fn int(v: u64) -> Result<i64, DbError> {
    i64::try_from(v).map_err(|_| DbError::OutOfRange {
        table: "ix_events",
        column: "block",
        source: format!("{v} does not fit a 64-bit column").into(),
    })
}

/// A task id as stored with its events: 32 big-endian bytes.
pub(super) fn id_bytes(id: U256) -> Vec<u8> {
    id.to_be_bytes::<32>().to_vec()
}

/// A task id as the API shows it (decimal), from its stored bytes.
pub(super) fn id_decimal(bytes: &[u8]) -> String {
    U256::try_from_be_slice(bytes).unwrap_or_default().to_string()
}

/// `0x` hex of stored bytes (a hash); empty when none was stored.
pub(super) fn bytes_hex(b: &[u8]) -> String {
    if b.is_empty() { String::new() } else { format!("0x{}", alloy::hex::encode(b)) }
}

/// Which contract a log is from, its event name, task and agent.
pub(super) fn classify(log: &Log) -> (&'static str, &'static str, Option<U256>, Option<String>) {
    if let Some(ev) = decode_log(log) {
        let task = tessera_bindings::task::TaskRecord::event_task_id(&ev);
        return ("escrow", derive::escrow_kind(&ev), task, None);
    }
    if let Some(ev) = derive::decode_registry(log) {
        let (agent, kind) = derive::registry_subject(&ev);
        return ("registry", kind, None, Some(agent.to_string()));
    }
    if let Ok(ev) =
        tessera_bindings::ReputationRegistry::ReputationRegistryEvents::decode_log(&log.inner)
            .map(|d| d.data)
    {
        use tessera_bindings::ReputationRegistry::ReputationRegistryEvents as R;
        let (kind, id) = match &ev {
            R::NewFeedback(e) => ("NewFeedback", e.agentId),
            R::FeedbackRevoked(e) => ("FeedbackRevoked", e.agentId),
            R::ResponseAppended(e) => ("ResponseAppended", e.agentId),
        };
        return ("reputation", kind, None, Some(super::feedback::feedback_subject(id)));
    }
    ("unknown", "Unknown", None, None)
}

/// The giver of a feedback or of its revocation (the `clientAddress` of
/// `NewFeedback` and `FeedbackRevoked`), as 20 bytes; `None` for any other
/// log.
pub(super) fn feedback_giver(log: &Log) -> Option<Vec<u8>> {
    use tessera_bindings::ReputationRegistry::ReputationRegistryEvents as R;
    match R::decode_log(&log.inner).ok()?.data {
        R::NewFeedback(e) => Some(e.clientAddress.to_vec()),
        R::FeedbackRevoked(e) => Some(e.clientAddress.to_vec()),
        R::ResponseAppended(_) => None,
    }
}

/// A log's content as stored in `raw`: the address (20 bytes), the number
/// of topics (1 byte), the topics (32 bytes each), the data. Its position
/// (block, index, block and transaction hash) has its own columns.
pub(super) fn encode_raw(log: &Log) -> Vec<u8> {
    let topics = log.topics();
    let data = &log.data().data;
    let mut out = Vec::with_capacity(21 + topics.len() * 32 + data.len());
    out.extend_from_slice(log.address().as_slice());
    // A log has at most four topics.
    out.push(topics.len() as u8);
    for t in topics {
        out.extend_from_slice(t.as_slice());
    }
    out.extend_from_slice(data);
    out
}

/// A log's content from its `raw` bytes ([`encode_raw`]); `None` when they
/// are not of that form.
pub(super) fn decode_raw(raw: &[u8]) -> Option<alloy::primitives::Log> {
    let n = usize::from(*raw.get(20)?);
    let body = 21 + n * 32;
    if n > 4 || raw.len() < body {
        return None;
    }
    let address = alloy::primitives::Address::from_slice(&raw[..20]);
    let topics = raw[21..body].chunks_exact(32).map(B256::from_slice).collect();
    let data = alloy::primitives::Bytes::copy_from_slice(&raw[body..]);
    Some(alloy::primitives::Log::new_unchecked(address, topics, data))
}

/// A log's position and content read back (`block`, `log_index`, `raw`),
/// without its hashes.
pub(super) fn stored_content(r: &AnyRow) -> Result<Log, DbError> {
    let raw: Vec<u8> = r.try_get("raw")?;
    let inner = decode_raw(&raw).ok_or_else(|| DbError::Corrupt {
        table: "ix_events",
        detail: format!(
            "raw log 0x{} is not address, topic count, topics, data",
            alloy::hex::encode(&raw)
        ),
    })?;
    Ok(Log {
        inner,
        block_number: Some(r.try_get::<i64, _>("block")? as u64),
        log_index: Some(r.try_get::<i64, _>("log_index")? as u64),
        ..Log::default()
    })
}

/// A task's group labels as stored in its `groups` column: a JSON array of
/// strings, `NULL` when there are none.
pub(super) fn groups_column(groups: &[String]) -> Option<String> {
    (!groups.is_empty()).then(|| serde_json::to_string(groups).expect("labels serialize"))
}

/// The group labels of a stored `groups` column (none for `NULL`).
pub(super) fn groups_from_column(stored: Option<String>) -> Result<Vec<String>, DbError> {
    let Some(stored) = stored else { return Ok(Vec::new()) };
    serde_json::from_str(&stored).map_err(|e| DbError::Corrupt {
        table: "ix_tasks",
        detail: format!("groups {stored:?}: {e}"),
    })
}

/// One transition as stored in a task's `history` column:
/// `[block, log_index, event, from, to, valid (0/1), problem]`.
type StoredTransition = (u64, u64, String, String, String, u8, Option<String>);

/// A task's transitions as stored in its row: a JSON array of
/// [`StoredTransition`]s.
pub(super) fn history_column(transitions: &[derive::TransitionRow]) -> String {
    let rows: Vec<_> = transitions
        .iter()
        .map(|t| {
            (
                t.block,
                t.log_index,
                &t.kind,
                &t.from_status,
                &t.to_status,
                u8::from(t.valid),
                &t.problem,
            )
        })
        .collect();
    serde_json::to_string(&rows).expect("transitions serialize")
}

/// The transitions of a stored `history` column.
pub(super) fn history_entries(stored: &str) -> Result<Vec<HistoryEntry>, DbError> {
    let rows: Vec<StoredTransition> = serde_json::from_str(stored).map_err(|e| {
        DbError::Corrupt { table: "ix_tasks", detail: format!("history {stored:?}: {e}") }
    })?;
    Ok(rows
        .into_iter()
        .map(|(block, log_index, event, from, to, valid, problem)| HistoryEntry {
            block,
            log_index,
            event,
            from,
            to,
            valid: valid == 1,
            problem,
        })
        .collect())
}

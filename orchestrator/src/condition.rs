//! Conditions: a sub-task's `when`, a small expression over the outputs of
//! the sub-tasks it depends on, read once when the plan is proposed and
//! evaluated when those sub-tasks are paid. False means the sub-task is
//! skipped: never funded.
//!
//! The language, whole:
//!
//! ```text
//! expr   := or
//! or     := and ("or" and)*
//! and    := not ("and" not)*
//! not    := "not" not | cmp
//! cmp    := value (("==" | "!=" | "<" | "<=" | ">" | ">=") value)?
//! value  := number | string | "true" | "false" | "null"
//!         | "len" "(" expr ")" | "(" expr ")" | ref
//! ref    := "out" "[" index "]" ("." name | "[" index "]")*
//! ```
//!
//! `out[2]` is sub-task 2's result document (the JSON its executor
//! delivered: `out[2].label`, `out[2].score`, `out[1].entities[0].name`);
//! a missing field is `null`. Strings are in double quotes (`\"` and `\\`
//! escape); numbers are decimal. `==` and `!=` compare any two values;
//! `<`, `<=`, `>`, `>=` compare two numbers or two strings and are false
//! otherwise. `len` counts a string's characters, an array's items or an
//! object's fields (0 for anything else). `and`, `or` and `not` take
//! `false`, `null`, `0`, `""` and empty arrays or objects as false and
//! everything else as true; so does the condition's result.
//!
//! An expression is at most [`MAX_CONDITION_BYTES`] long and nests at most
//! [`MAX_CONDITION_DEPTH`] levels; it names only sub-tasks its sub-task
//! depends on. Nothing in it runs code: it is parsed into the [`Expr`] tree
//! and walked.

use std::{collections::HashMap, fmt};

use serde_json::Value;

/// Longest condition, in bytes.
pub const MAX_CONDITION_BYTES: usize = 1024;
/// Deepest nesting of a condition (parentheses, `not`, `len`, operators).
pub const MAX_CONDITION_DEPTH: usize = 32;

/// Why a condition is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("condition `{text}`: {problem} (at byte {at})")]
pub struct ConditionError {
    /// The condition, cut to 80 characters.
    pub text: String,
    /// What is wrong.
    pub problem: String,
    /// Where, in bytes from the start.
    pub at: usize,
}

/// A step's `when` as a plan holds it: the text as written, parsed once
/// when the plan is read or built (serde reads and writes the text only).
/// A text that does not parse keeps its error, for the plan's validation to
/// refuse.
#[derive(Debug, Clone)]
pub struct When {
    text: String,
    parsed: Result<Condition, ConditionError>,
}

impl When {
    /// `text`, parsed.
    pub fn new(text: impl Into<String>) -> Self {
        let text = text.into();
        let parsed = Condition::parse(&text);
        Self { text, parsed }
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The parsed condition, or why the text is not one.
    pub fn condition(&self) -> Result<&Condition, ConditionError> {
        self.parsed.as_ref().map_err(Clone::clone)
    }
}

impl PartialEq for When {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for When {}

impl std::ops::Deref for When {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl From<String> for When {
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

impl From<&str> for When {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl serde::Serialize for When {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for When {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::new)
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// One step into a result document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// `.name`
    Name(String),
    /// `[n]`
    Item(usize),
}

/// A parsed condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A literal.
    Lit(Value),
    /// `out[index]` and the fields after it.
    Ref {
        /// The sub-task.
        index: u32,
        /// The fields, in order.
        path: Vec<Field>,
    },
    /// `len(e)`
    Len(Box<Expr>),
    /// `not e`
    Not(Box<Expr>),
    /// `a and b`
    And(Box<Expr>, Box<Expr>),
    /// `a or b`
    Or(Box<Expr>, Box<Expr>),
    /// `a op b`
    Cmp(Cmp, Box<Expr>, Box<Expr>),
}

/// A condition, parsed, with its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    text: String,
    expr: Expr,
    /// Where each `out[n]` writes its index: byte range and the index.
    spans: Vec<(std::ops::Range<usize>, u32)>,
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Condition {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Self, ConditionError> {
        let fail = |problem: &str, at: usize| ConditionError {
            text: text.chars().take(80).collect(),
            problem: problem.to_owned(),
            at,
        };
        if text.len() > MAX_CONDITION_BYTES {
            return Err(fail(&format!("longer than {MAX_CONDITION_BYTES} bytes"), 0));
        }
        let tokens = lex(text).map_err(|(p, at)| fail(&p, at))?;
        let mut parser = Parser { tokens: &tokens, pos: 0, depth: 0, refs: Vec::new() };
        let expr = parser.or().map_err(|(p, at)| fail(&p, at))?;
        if let Some((tok, at)) = tokens.get(parser.pos) {
            return Err(fail(&format!("unexpected {tok}"), *at));
        }
        // An index is a number token: digits, perhaps a `.0`.
        let spans = parser
            .refs
            .iter()
            .map(|&(start, index)| {
                let len =
                    text[start..].bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
                (start..start + len, index)
            })
            .collect();
        Ok(Self { text: text.to_owned(), expr, spans })
    }

    /// The text with each `out[n]` written `out[label(n)]`, the rest as it
    /// was: how references are renumbered (a nested plan's, from the
    /// author's numbering to the run's) or shown (as step paths).
    pub fn relabelled(&self, label: impl Fn(u32) -> String) -> String {
        let mut out = String::with_capacity(self.text.len());
        let mut from = 0;
        for (range, index) in &self.spans {
            out.push_str(&self.text[from..range.start]);
            out.push_str(&label(*index));
            from = range.end;
        }
        out.push_str(&self.text[from..]);
        out
    }

    /// The sub-tasks the condition reads, each once, in order.
    pub fn references(&self) -> Vec<u32> {
        let mut out = Vec::new();
        collect_refs(&self.expr, &mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Every field path the condition reads, in the order written: the
    /// sub-task and the steps into its result document (empty for the
    /// whole document, as `out[0]` or `len(out[0])` read it). What a plan
    /// checks against the result schemas the capabilities publish.
    pub fn paths(&self) -> Vec<(u32, &[Field])> {
        let mut out = Vec::new();
        collect_paths(&self.expr, &mut out);
        out
    }

    /// Evaluates over the result documents of the sub-tasks it reads
    /// (missing ones are `null`).
    pub fn eval(&self, outputs: &HashMap<u32, Value>) -> bool {
        truthy(&eval(&self.expr, outputs))
    }
}

fn collect_refs(e: &Expr, out: &mut Vec<u32>) {
    match e {
        Expr::Lit(_) => {}
        Expr::Ref { index, .. } => out.push(*index),
        Expr::Len(a) | Expr::Not(a) => collect_refs(a, out),
        Expr::And(a, b) | Expr::Or(a, b) | Expr::Cmp(_, a, b) => {
            collect_refs(a, out);
            collect_refs(b, out);
        }
    }
}

fn collect_paths<'e>(e: &'e Expr, out: &mut Vec<(u32, &'e [Field])>) {
    match e {
        Expr::Lit(_) => {}
        Expr::Ref { index, path } => out.push((*index, path)),
        Expr::Len(a) | Expr::Not(a) => collect_paths(a, out),
        Expr::And(a, b) | Expr::Or(a, b) | Expr::Cmp(_, a, b) => {
            collect_paths(a, out);
            collect_paths(b, out);
        }
    }
}

/// A field path as a condition writes it after `out[n]`: `.entities[0].name`.
pub fn path_text(path: &[Field]) -> String {
    let mut out = String::new();
    for f in path {
        match f {
            Field::Name(n) => {
                out.push('.');
                out.push_str(n);
            }
            Field::Item(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn eval(e: &Expr, outputs: &HashMap<u32, Value>) -> Value {
    match e {
        Expr::Lit(v) => v.clone(),
        Expr::Ref { index, path } => {
            let mut at = outputs.get(index).unwrap_or(&Value::Null);
            for f in path {
                at = match (f, at) {
                    (Field::Name(n), Value::Object(o)) => o.get(n).unwrap_or(&Value::Null),
                    (Field::Item(i), Value::Array(a)) => a.get(*i).unwrap_or(&Value::Null),
                    _ => &Value::Null,
                };
            }
            at.clone()
        }
        Expr::Len(a) => {
            let n = match eval(a, outputs) {
                Value::String(s) => s.chars().count(),
                Value::Array(a) => a.len(),
                Value::Object(o) => o.len(),
                _ => 0,
            };
            Value::from(n)
        }
        Expr::Not(a) => Value::Bool(!truthy(&eval(a, outputs))),
        Expr::And(a, b) => Value::Bool(truthy(&eval(a, outputs)) && truthy(&eval(b, outputs))),
        Expr::Or(a, b) => Value::Bool(truthy(&eval(a, outputs)) || truthy(&eval(b, outputs))),
        Expr::Cmp(op, a, b) => Value::Bool(compare(*op, &eval(a, outputs), &eval(b, outputs))),
    }
}

fn compare(op: Cmp, a: &Value, b: &Value) -> bool {
    use std::cmp::Ordering;
    let ordering = match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x.as_f64().zip(y.as_f64()).and_then(|(x, y)| x.partial_cmp(&y))
        }
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    };
    match op {
        Cmp::Eq => ordering.map_or_else(|| a == b, |o| o == Ordering::Equal),
        Cmp::Ne => ordering.map_or_else(|| a != b, |o| o != Ordering::Equal),
        Cmp::Lt => ordering == Some(Ordering::Less),
        Cmp::Le => matches!(ordering, Some(Ordering::Less | Ordering::Equal)),
        Cmp::Gt => ordering == Some(Ordering::Greater),
        Cmp::Ge => matches!(ordering, Some(Ordering::Greater | Ordering::Equal)),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Word(String),
    Op(&'static str),
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Num(n) => write!(f, "number {n}"),
            Self::Str(s) => write!(f, "string {s:?}"),
            Self::Word(w) => write!(f, "`{w}`"),
            Self::Op(o) => write!(f, "`{o}`"),
        }
    }
}

type Fail = (String, usize);

fn lex(text: &str) -> Result<Vec<(Tok, usize)>, Fail> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c == b'"' {
            let mut s = String::new();
            i += 1;
            loop {
                let Some(&c) = bytes.get(i) else {
                    return Err(("a string without its closing quote".into(), start));
                };
                match c {
                    b'"' => break,
                    b'\\' => {
                        match bytes.get(i + 1) {
                            Some(b'"') => s.push('"'),
                            Some(b'\\') => s.push('\\'),
                            _ => return Err(("only \\\" and \\\\ escape in a string".into(), i)),
                        }
                        i += 2;
                    }
                    _ => {
                        let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
                        s.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            i += 1;
            out.push((Tok::Str(s), start));
        } else if c.is_ascii_digit()
            || (c == b'-' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            i += 1;
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            let n: f64 =
                text[start..i].parse().map_err(|_| ("a malformed number".to_owned(), start))?;
            out.push((Tok::Num(n), start));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'-')
            {
                i += 1;
            }
            out.push((Tok::Word(text[start..i].to_owned()), start));
        } else {
            let two = text.get(i..i + 2).unwrap_or("");
            let op = ["==", "!=", "<=", ">="].into_iter().find(|o| *o == two);
            let op = op.or_else(|| {
                ["<", ">", "(", ")", "[", "]", "."].into_iter().find(|o| o.as_bytes()[0] == c)
            });
            let Some(op) = op else {
                let ch = text[i..].chars().next().unwrap_or('?');
                return Err((format!("unexpected character {ch:?}"), i));
            };
            i += op.len();
            out.push((Tok::Op(op), start));
        }
        if out.len() > 256 {
            return Err(("more than 256 tokens".into(), start));
        }
    }
    Ok(out)
}

struct Parser<'t> {
    tokens: &'t [(Tok, usize)],
    pos: usize,
    depth: usize,
    /// Each reference's index: where its token starts, and its value.
    refs: Vec<(usize, u32)>,
}

impl Parser<'_> {
    fn at(&self) -> usize {
        self.tokens.get(self.pos).map_or_else(|| self.tokens.last().map_or(0, |t| t.1 + 1), |t| t.1)
    }

    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|t| &t.0)
    }

    fn word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(x)) if x == w)
    }

    fn op(&self, o: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(x)) if *x == o)
    }

    fn expect(&mut self, o: &'static str) -> Result<(), Fail> {
        if self.op(o) {
            self.pos += 1;
            Ok(())
        } else {
            Err((format!("expected `{o}`"), self.at()))
        }
    }

    fn deeper(&mut self) -> Result<(), Fail> {
        self.depth += 1;
        if self.depth > MAX_CONDITION_DEPTH {
            return Err((format!("nested more than {MAX_CONDITION_DEPTH} levels"), self.at()));
        }
        Ok(())
    }

    fn or(&mut self) -> Result<Expr, Fail> {
        self.deeper()?;
        let mut e = self.and()?;
        while self.word("or") {
            self.pos += 1;
            e = Expr::Or(Box::new(e), Box::new(self.and()?));
        }
        self.depth -= 1;
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, Fail> {
        let mut e = self.not()?;
        while self.word("and") {
            self.pos += 1;
            e = Expr::And(Box::new(e), Box::new(self.not()?));
        }
        Ok(e)
    }

    fn not(&mut self) -> Result<Expr, Fail> {
        if self.word("not") {
            self.pos += 1;
            self.deeper()?;
            let e = Expr::Not(Box::new(self.not()?));
            self.depth -= 1;
            return Ok(e);
        }
        self.cmp()
    }

    fn cmp(&mut self) -> Result<Expr, Fail> {
        let a = self.value()?;
        let op = match self.peek() {
            Some(Tok::Op("==")) => Cmp::Eq,
            Some(Tok::Op("!=")) => Cmp::Ne,
            Some(Tok::Op("<")) => Cmp::Lt,
            Some(Tok::Op("<=")) => Cmp::Le,
            Some(Tok::Op(">")) => Cmp::Gt,
            Some(Tok::Op(">=")) => Cmp::Ge,
            _ => return Ok(a),
        };
        self.pos += 1;
        Ok(Expr::Cmp(op, Box::new(a), Box::new(self.value()?)))
    }

    fn value(&mut self) -> Result<Expr, Fail> {
        let at = self.at();
        let Some(tok) = self.peek().cloned() else {
            return Err(("the condition ends where a value should be".into(), at));
        };
        self.pos += 1;
        match tok {
            Tok::Num(n) => {
                Ok(Expr::Lit(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)))
            }
            Tok::Str(s) => Ok(Expr::Lit(Value::String(s))),
            Tok::Word(w) => match w.as_str() {
                "true" => Ok(Expr::Lit(Value::Bool(true))),
                "false" => Ok(Expr::Lit(Value::Bool(false))),
                "null" => Ok(Expr::Lit(Value::Null)),
                "len" => {
                    self.expect("(")?;
                    self.deeper()?;
                    let e = self.or()?;
                    self.depth -= 1;
                    self.expect(")")?;
                    Ok(Expr::Len(Box::new(e)))
                }
                "out" => self.reference(),
                other => Err((
                    format!(
                        "unknown word `{other}` (values are out[n]…, len(…), numbers, strings, true, false, null)"
                    ),
                    at,
                )),
            },
            Tok::Op("(") => {
                let e = self.or()?;
                self.expect(")")?;
                Ok(e)
            }
            other => Err((format!("unexpected {other}"), at)),
        }
    }

    fn index(&mut self) -> Result<u64, Fail> {
        let at = self.at();
        match self.peek() {
            Some(Tok::Num(n)) if n.fract() == 0.0 && *n >= 0.0 && *n <= f64::from(u32::MAX) => {
                let n = *n as u64;
                self.pos += 1;
                Ok(n)
            }
            _ => Err(("expected an index (a whole number)".into(), at)),
        }
    }

    fn reference(&mut self) -> Result<Expr, Fail> {
        self.expect("[")?;
        let start = self.at();
        let index =
            u32::try_from(self.index()?).map_err(|_| ("index too large".to_owned(), self.at()))?;
        self.refs.push((start, index));
        self.expect("]")?;
        let mut path = Vec::new();
        loop {
            if self.op(".") {
                self.pos += 1;
                let at = self.at();
                match self.peek().cloned() {
                    Some(Tok::Word(name)) => {
                        self.pos += 1;
                        path.push(Field::Name(name));
                    }
                    _ => return Err(("expected a field name after `.`".into(), at)),
                }
            } else if self.op("[") {
                self.pos += 1;
                let i = usize::try_from(self.index()?).unwrap_or(usize::MAX);
                self.expect("]")?;
                path.push(Field::Item(i));
            } else {
                break;
            }
            if path.len() > MAX_CONDITION_DEPTH {
                return Err((
                    format!("a path deeper than {MAX_CONDITION_DEPTH} fields"),
                    self.at(),
                ));
            }
        }
        Ok(Expr::Ref { index, path })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn outputs() -> HashMap<u32, Value> {
        HashMap::from([
            (0, json!({"label": "negative", "score": -0.6, "text": "bad service"})),
            (1, json!({"entities": [{"name": "Harbour", "kind": "org"}, {"name": "Ana"}]})),
        ])
    }

    fn holds(text: &str) -> bool {
        Condition::parse(text).unwrap_or_else(|e| panic!("{e}")).eval(&outputs())
    }

    #[test]
    fn comparisons_fields_and_logic() {
        assert!(holds(r#"out[0].label == "negative""#));
        assert!(!holds(r#"out[0].label == "positive""#));
        assert!(holds("out[0].score < -0.5"));
        assert!(holds("out[0].score <= -0.6 and out[0].score >= -0.6"));
        assert!(holds("len(out[1].entities) > 1"));
        assert!(holds(r#"out[1].entities[0].name == "Harbour""#));
        assert!(holds("len(out[0].text) == 11"));
        assert!(holds(r#"not (out[0].label == "positive") or false"#));
        assert!(holds("out[1].missing == null"));
        assert!(!holds("out[1].missing"), "null is false");
        assert!(!holds("out[7]"), "an output that is not there is null");
        // Mixed types compare equal to nothing and order nothing.
        assert!(!holds(r#"out[0].score == "-0.6""#));
        assert!(!holds(r#"out[0].score < "a""#));
        assert!(holds(r#""abc" < "abd""#));
        // and binds tighter than or.
        assert!(holds("true or false and false"));
        assert!(!holds("(true or false) and false"));
    }

    #[test]
    fn references_are_listed_once() {
        let c = Condition::parse("out[2].a == 1 or out[0].b and out[2].c").unwrap();
        assert_eq!(c.references(), [0, 2]);
        assert_eq!(c.to_string(), "out[2].a == 1 or out[0].b and out[2].c");
    }

    #[test]
    fn paths_are_listed_as_written_with_the_whole_output_empty() {
        let c = Condition::parse(
            r#"out[1].entities[0].name == "Ana" or len(out[0]) > 2 and not out[0].label.x"#,
        )
        .unwrap();
        let paths: Vec<(u32, String)> =
            c.paths().into_iter().map(|(i, p)| (i, path_text(p))).collect();
        assert_eq!(
            paths,
            [(1, ".entities[0].name".to_owned()), (0, String::new()), (0, ".label.x".to_owned())]
        );
        assert!(Condition::parse("true and 1 < 2").unwrap().paths().is_empty());
    }

    #[test]
    fn references_are_relabelled_in_place() {
        let c =
            Condition::parse(r#"out[2].a == "out[2]" or out[ 0 ].b and len(out[2].c)"#).unwrap();
        let text = c.relabelled(|i| format!("{}", i + 10));
        // Strings are left alone; spacing is kept.
        assert_eq!(text, r#"out[12].a == "out[2]" or out[ 10 ].b and len(out[12].c)"#);
        assert_eq!(Condition::parse(&text).unwrap().references(), [10, 12]);
        assert_eq!(
            c.relabelled(|i| format!("1.{i}")),
            r#"out[1.2].a == "out[2]" or out[ 1.0 ].b and len(out[1.2].c)"#
        );
    }

    #[test]
    fn bad_conditions_are_refused_with_where() {
        for (text, problem) in [
            ("out[0].label ==", "ends where a value should be"),
            ("out[0].label = 1", "unexpected character '='"),
            (r#"out[0].label == "x"#, "without its closing quote"),
            ("out(0)", "expected `[`"),
            ("out[0.5]", "expected an index"),
            ("system(\"rm\")", "unknown word `system`"),
            ("out[0] == 1 1", "unexpected number 1"),
            ("out[0].", "expected a field name"),
            ("len out[0]", "expected `(`"),
            ("out[0] ; 1", "unexpected character ';'"),
        ] {
            let err = Condition::parse(text).unwrap_err();
            assert!(err.to_string().contains(problem), "{text:?}: {err}");
        }
        let deep = format!("{}true{}", "(".repeat(40), ")".repeat(40));
        assert!(Condition::parse(&deep).unwrap_err().problem.contains("nested more than 32"));
        let nots = format!("{}true", "not ".repeat(40));
        assert!(Condition::parse(&nots).is_err());
        let long = format!("out[0].a == \"{}\"", "x".repeat(MAX_CONDITION_BYTES));
        assert!(Condition::parse(&long).unwrap_err().problem.contains("longer than"));
        let err = Condition::parse("out[0].x == 1 and )").unwrap_err();
        assert_eq!(err.at, 18);
    }
}

//! canal's FlatMessage JSON and the record key of one rows event, written straight from the
//! parser's decoded rows (`bridge.parse.rows.DecodedRow`): no per-row dicts, no FlatMessage
//! object. Mirrors `bridge.mq.flat_message._decoded_rows` / `_old_values` and
//! `bridge.mq.records.message_key` byte for byte; anything it does not expect (a value that
//! is not a str or None, images that do not line up) returns None and the caller takes the
//! pure-Python path, which then says what is wrong.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

use crate::json::{write_int, write_key, write_opt_str, write_str};

pub const UPDATE: u8 = 1;
pub const DELETE: u8 = 2;

type Text<'py> = Option<Bound<'py, PyString>>;

/// One image of a row: its plan (None: the row has no such image), values and sql types.
struct Image<'py> {
    plan: Option<Bound<'py, PyAny>>,
    values: Bound<'py, PyTuple>,
    types: Bound<'py, PyTuple>,
}

fn image<'py>(row: &Bound<'py, PyAny>, before: bool) -> PyResult<Option<Image<'py>>> {
    let py = row.py();
    let (plan, values, types) = if before {
        (
            intern!(py, "old_plan"),
            intern!(py, "old_values"),
            intern!(py, "old_types"),
        )
    } else {
        (
            intern!(py, "new_plan"),
            intern!(py, "new_values"),
            intern!(py, "new_types"),
        )
    };
    let plan = row.getattr(plan)?;
    let (Ok(values), Ok(types)) = (
        row.getattr(values)?.cast_into::<PyTuple>(),
        row.getattr(types)?.cast_into::<PyTuple>(),
    ) else {
        return Ok(None);
    };
    let plan = if plan.is_none() { None } else { Some(plan) };
    Ok(Some(Image {
        plan,
        values,
        types,
    }))
}

fn text<'py>(item: Bound<'py, PyAny>) -> Option<Text<'py>> {
    if item.is_none() {
        Some(None)
    } else {
        item.cast_into::<PyString>().ok().map(Some)
    }
}

fn texts<'py>(tuple: &Bound<'py, PyTuple>) -> Option<Vec<Text<'py>>> {
    tuple.iter().map(text).collect()
}

fn names_of<'py>(tuple: &Bound<'py, PyTuple>) -> Option<Vec<Bound<'py, PyString>>> {
    tuple
        .iter()
        .map(|item| item.cast_into::<PyString>().ok())
        .collect()
}

fn same_text(a: &Text<'_>, b: &Text<'_>) -> PyResult<bool> {
    Ok(match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.is(b) || a.to_str()? == b.to_str()?,
        _ => false,
    })
}

fn same_names(a: &[Bound<'_, PyString>], b: &[Bound<'_, PyString>]) -> PyResult<bool> {
    if a.len() != b.len() {
        return Ok(false);
    }
    for (a, b) in a.iter().zip(b) {
        if !(a.is(b) || a.to_str()? == b.to_str()?) {
            return Ok(false);
        }
    }
    Ok(true)
}

fn position(names: &[Bound<'_, PyString>], name: &str) -> PyResult<Option<usize>> {
    for (i, candidate) in names.iter().enumerate() {
        if candidate.to_str()? == name {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Python's ``dict.update``: a name keeps its first position, its value is the latest.
fn upsert<V>(map: &mut Vec<(String, V)>, name: &str, value: V) {
    match map.iter_mut().find(|(n, _)| n == name) {
        Some(slot) => slot.1 = value,
        None => map.push((name.to_owned(), value)),
    }
}

fn write_object(
    out: &mut Vec<u8>,
    names: &[Bound<'_, PyString>],
    values: &[Text<'_>],
) -> PyResult<()> {
    out.push(b'{');
    for (i, (name, value)) in names.iter().zip(values).enumerate() {
        write_key(out, i == 0, name.to_str()?);
        write_opt_str(out, value.as_ref().map(|v| v.to_str()).transpose()?);
    }
    out.push(b'}');
    Ok(())
}

/// An UPDATE row's ``old``: the before-image texts of the columns whose value changed.
fn write_old(
    out: &mut Vec<u8>,
    before: Option<&Image<'_>>,
    names: &[Bound<'_, PyString>],
    values: &[Text<'_>],
) -> PyResult<Option<()>> {
    let Some((before, plan)) = before.and_then(|b| b.plan.as_ref().map(|plan| (b, plan))) else {
        out.extend_from_slice(b"{}");
        return Ok(Some(()));
    };
    let py = plan.py();
    let Ok(tuple) = plan.getattr(intern!(py, "names"))?.cast_into::<PyTuple>() else {
        return Ok(None);
    };
    let (Some(before_names), Some(olds)) = (names_of(&tuple), texts(&before.values)) else {
        return Ok(None);
    };
    if before_names.len() != olds.len() {
        return Ok(None);
    }
    let mut changed: Vec<(&Bound<'_, PyString>, &Text<'_>)> = Vec::new();
    if same_names(&before_names, names)? {
        if values.len() != olds.len() {
            return Ok(None);
        }
        for ((name, old), new) in before_names.iter().zip(&olds).zip(values) {
            if !same_text(old, new)? {
                changed.push((name, old));
            }
        }
    } else {
        // Different present columns (MINIMAL/NOBLOB images): a column absent before is updated.
        for (name, old) in before_names.iter().zip(&olds) {
            let updated = match position(names, name.to_str()?)? {
                Some(i) => !same_text(old, &values[i])?,
                None => false,
            };
            if updated {
                changed.push((name, old));
            }
        }
    }
    out.push(b'{');
    for (i, (name, old)) in changed.into_iter().enumerate() {
        write_key(out, i == 0, name.to_str()?);
        write_opt_str(out, old.as_ref().map(|v| v.to_str()).transpose()?);
    }
    out.push(b'}');
    Ok(Some(()))
}

/// What the rows of one message share: names, MySQL types and key positions of its plan.
struct PlanView<'py> {
    plan: Bound<'py, PyAny>,
    names: Vec<Bound<'py, PyString>>,
    /// Where each of the message's key columns sits in this plan (None: absent).
    key_positions: Vec<Option<usize>>,
}

struct Message {
    data: Vec<u8>,
    data_rows: usize,
    old: Vec<u8>,
    old_rows: usize,
    sql_types: Vec<(String, i64)>,
    mysql_types: Vec<(String, String)>,
    pk_names: Vec<String>,
    first_key: Option<Vec<Option<String>>>,
    mixed_keys: bool,
}

fn collect(rows: &Bound<'_, PyAny>, kind: u8) -> PyResult<Option<Message>> {
    let py = rows.py();
    let mut message = Message {
        data: Vec::with_capacity(256),
        data_rows: 0,
        old: Vec::new(),
        old_rows: 0,
        sql_types: Vec::new(),
        mysql_types: Vec::new(),
        pk_names: Vec::new(),
        first_key: None,
        mixed_keys: false,
    };
    let mut view: Option<PlanView<'_>> = None;
    let mut last_types: Option<Bound<'_, PyTuple>> = None;
    for (index, row) in rows.try_iter()?.enumerate() {
        let row = row?;
        let Some(current) = image(&row, kind == DELETE)? else {
            return Ok(None);
        };
        let Some(values) = texts(&current.values) else {
            return Ok(None);
        };
        let mut names: &[Bound<'_, PyString>] = &[];
        if let Some(plan) = &current.plan {
            if !view.as_ref().is_some_and(|v| v.plan.is(plan)) {
                let Ok(tuple) = plan.getattr(intern!(py, "names"))?.cast_into::<PyTuple>() else {
                    return Ok(None);
                };
                let Some(plan_names) = names_of(&tuple) else {
                    return Ok(None);
                };
                let mysql = plan.getattr(intern!(py, "mysql_types"))?;
                let Ok(mysql) = mysql.cast_into::<PyTuple>() else {
                    return Ok(None);
                };
                let Some(mysql) = names_of(&mysql) else {
                    return Ok(None);
                };
                if mysql.len() != plan_names.len() {
                    return Ok(None);
                }
                for (name, mysql_type) in plan_names.iter().zip(&mysql) {
                    upsert(
                        &mut message.mysql_types,
                        name.to_str()?,
                        mysql_type.to_str()?.to_owned(),
                    );
                }
                if index == 0 {
                    let keys = plan.getattr(intern!(py, "keys"))?;
                    let Ok(keys) = keys.cast_into::<PyTuple>() else {
                        return Ok(None);
                    };
                    if keys.len() != plan_names.len() {
                        return Ok(None);
                    }
                    for (name, key) in plan_names.iter().zip(keys.iter()) {
                        if key.is_truthy()? {
                            message.pk_names.push(name.to_str()?.to_owned());
                        }
                    }
                }
                let mut key_positions = Vec::with_capacity(message.pk_names.len());
                for pk in &message.pk_names {
                    key_positions.push(position(&plan_names, pk)?);
                }
                view = Some(PlanView {
                    plan: plan.clone(),
                    names: plan_names,
                    key_positions,
                });
                last_types = None;
            }
            let current_view = view.as_ref().expect("set above");
            names = &current_view.names;
            if names.len() != values.len() || names.len() != current.types.len() {
                return Ok(None);
            }
            let types_changed = match &last_types {
                Some(last) => !(last.is(&current.types) || last.eq(&current.types)?),
                None => !current.types.is_empty(),
            };
            if types_changed {
                for (name, sql_type) in names.iter().zip(current.types.iter()) {
                    upsert(
                        &mut message.sql_types,
                        name.to_str()?,
                        sql_type.extract::<i64>()?,
                    );
                }
                last_types = Some(current.types.clone());
            }
            if !values.is_empty() {
                if message.data_rows > 0 {
                    message.data.push(b',');
                }
                write_object(&mut message.data, names, &values)?;
                message.data_rows += 1;
                note_key(&mut message, &current_view.key_positions, &values)?;
            }
        }
        if kind == UPDATE {
            let before = image(&row, true)?;
            if message.old_rows > 0 {
                message.old.push(b',');
            }
            if write_old(&mut message.old, before.as_ref(), names, &values)?.is_none() {
                return Ok(None);
            }
            message.old_rows += 1;
        }
    }
    Ok(Some(message))
}

/// Tracks whether all data rows share one primary-key value (``message_key``).
fn note_key(
    message: &mut Message,
    positions: &[Option<usize>],
    values: &[Text<'_>],
) -> PyResult<()> {
    if message.pk_names.is_empty() || message.mixed_keys {
        return Ok(());
    }
    let mut key = Vec::with_capacity(positions.len());
    for position in positions {
        let value = match position {
            Some(i) => values[*i].as_ref().map(|v| v.to_str()).transpose()?,
            None => None,
        };
        key.push(value);
    }
    match &message.first_key {
        None => message.first_key = Some(key.iter().map(|v| v.map(str::to_owned)).collect()),
        Some(first) => {
            if first.iter().map(Option::as_deref).ne(key.iter().copied()) {
                message.mixed_keys = true;
            }
        }
    }
    Ok(())
}

fn record_key(database: &str, table: &str, message: &Message) -> Vec<u8> {
    let mut key = Vec::with_capacity(database.len() + table.len() + 24);
    key.extend_from_slice(database.as_bytes());
    if !table.is_empty() {
        key.push(b'.');
        key.extend_from_slice(table.as_bytes());
    }
    let Some(values) = message.first_key.as_ref().filter(|_| !message.mixed_keys) else {
        return key;
    };
    key.push(b':');
    match values.as_slice() {
        [Some(one)] => key.extend_from_slice(one.as_bytes()),
        _ => {
            key.push(b'[');
            for (i, value) in values.iter().enumerate() {
                if i > 0 {
                    key.push(b',');
                }
                write_opt_str(&mut key, value.as_deref());
            }
            key.push(b']');
        }
    }
    key
}

/// A JSON array of already written row objects, or null when there are none.
fn write_rows(out: &mut Vec<u8>, count: usize, rows: &[u8]) {
    if count == 0 {
        out.extend_from_slice(b"null");
    } else {
        out.push(b'[');
        out.extend_from_slice(rows);
        out.push(b']');
    }
}

/// A JSON object of name -> value in insertion order, or null when empty.
fn write_map<V>(out: &mut Vec<u8>, map: &[(String, V)], write_value: impl Fn(&mut Vec<u8>, &V)) {
    if map.is_empty() {
        out.extend_from_slice(b"null");
        return;
    }
    out.push(b'{');
    for (i, (name, value)) in map.iter().enumerate() {
        write_key(out, i == 0, name);
        write_value(out, value);
    }
    out.push(b'}');
}

/// The FlatMessage JSON of a message, written without its ``id`` and ``ts`` values; the
/// returned offsets are where those two numbers belong (``id`` first).
fn write_message(
    message: &Message,
    database: &str,
    table: &str,
    event_type: &str,
    es: i64,
    sql: &str,
    gtid: &str,
) -> (Vec<u8>, usize, usize) {
    let mut out = Vec::with_capacity(message.data.len() + message.old.len() + 256);
    out.extend_from_slice(b"{\"data\":");
    write_rows(&mut out, message.data_rows, &message.data);
    out.extend_from_slice(b",\"database\":");
    write_str(&mut out, database);
    out.extend_from_slice(b",\"es\":");
    write_int(&mut out, es);
    out.extend_from_slice(b",\"gtid\":");
    write_str(&mut out, gtid);
    out.extend_from_slice(b",\"id\":");
    let id_at = out.len();
    out.extend_from_slice(b",\"isDdl\":false,\"mysqlType\":");
    write_map(&mut out, &message.mysql_types, |out, v| write_str(out, v));
    out.extend_from_slice(b",\"old\":");
    write_rows(&mut out, message.old_rows, &message.old);
    out.extend_from_slice(b",\"pkNames\":");
    if message.pk_names.is_empty() {
        out.extend_from_slice(b"null");
    } else {
        out.push(b'[');
        for (i, name) in message.pk_names.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(&mut out, name);
        }
        out.push(b']');
    }
    out.extend_from_slice(b",\"sql\":");
    write_str(&mut out, sql);
    out.extend_from_slice(b",\"sqlType\":");
    write_map(&mut out, &message.sql_types, |out, v| write_int(out, *v));
    out.extend_from_slice(b",\"table\":");
    write_str(&mut out, table);
    out.extend_from_slice(b",\"ts\":");
    let ts_at = out.len();
    out.extend_from_slice(b",\"type\":");
    write_str(&mut out, event_type);
    out.push(b'}');
    (out, id_at, ts_at)
}

/// ``(value, key)`` of the record of one rows event, or None to use the pure-Python path.
#[pyfunction]
#[pyo3(signature = (id, database, table, kind, event_type, es, ts, sql, gtid, rows))]
#[allow(clippy::too_many_arguments)]
pub fn rows_record<'py>(
    py: Python<'py>,
    id: i64,
    database: &str,
    table: &str,
    kind: u8,
    event_type: &str,
    es: i64,
    ts: i64,
    sql: &str,
    gtid: &str,
    rows: &Bound<'py, PyAny>,
) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
    let Some(message) = collect(rows, kind)? else {
        return Ok(None);
    };
    let (template, id_at, ts_at) =
        write_message(&message, database, table, event_type, es, sql, gtid);
    let mut out = Vec::with_capacity(template.len() + 40);
    out.extend_from_slice(&template[..id_at]);
    write_int(&mut out, id);
    out.extend_from_slice(&template[id_at..ts_at]);
    write_int(&mut out, ts);
    out.extend_from_slice(&template[ts_at..]);
    let key = record_key(database, table, &message);
    Ok(Some((PyBytes::new(py, &out), PyBytes::new(py, &key))))
}

/// The record of one rows event as ``(rows, head, middle, tail, key)``, to be finished later
/// with ``head + id + middle + ts + tail`` (the batch id and build time are known only then);
/// None where the pure-Python path must decide, or where value and key come to more than
/// ``limit`` bytes. Same bytes as ``rows_record`` once finished.
#[pyfunction]
#[pyo3(signature = (database, table, kind, event_type, es, sql, gtid, rows, limit))]
#[allow(clippy::too_many_arguments)]
pub fn rows_record_parts<'py>(
    py: Python<'py>,
    database: &str,
    table: &str,
    kind: u8,
    event_type: &str,
    es: i64,
    sql: &str,
    gtid: &str,
    rows: &Bound<'py, PyTuple>,
    limit: usize,
) -> PyResult<Option<RecordParts<'py>>> {
    let Some(message) = collect(rows.as_any(), kind)? else {
        return Ok(None);
    };
    let (template, id_at, ts_at) =
        write_message(&message, database, table, event_type, es, sql, gtid);
    let key = record_key(database, table, &message);
    if template.len() + key.len() > limit {
        return Ok(None);
    }
    Ok(Some((
        rows.len(),
        PyBytes::new(py, &template[..id_at]),
        PyBytes::new(py, &template[id_at..ts_at]),
        PyBytes::new(py, &template[ts_at..]),
        PyBytes::new(py, &key),
    )))
}

type RecordParts<'py> = (
    usize,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
);

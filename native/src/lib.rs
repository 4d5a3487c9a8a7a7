//! canal-bridge's compiled hot path. Every function here has a pure-Python twin in `bridge/`
//! with the same output; `bridge.native` picks this module when it is installed.

mod convert;
mod digits;
mod event;
mod flat;
mod framing;
mod image;
mod javafmt;
mod json;
mod jsonb;
mod jsondiff;
mod result;
mod writer;

use pyo3::prelude::*;

#[pymodule]
fn canal_bridge_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(convert::flat_events, module)?)?;
    module.add_function(wrap_pyfunction!(event::rows_event_parts, module)?)?;
    module.add_function(wrap_pyfunction!(flat::rows_record, module)?)?;
    module.add_function(wrap_pyfunction!(framing::binlog_events, module)?)?;
    module.add_function(wrap_pyfunction!(jsondiff::apply_json_diffs, module)?)?;
    module.add_function(wrap_pyfunction!(framing::read_end, module)?)?;
    module.add_function(wrap_pyfunction!(flat::rows_record_parts, module)?)?;
    module.add_function(wrap_pyfunction!(flat::row_records_parts, module)?)?;
    module.add_function(wrap_pyfunction!(result::text_rows, module)?)?;
    module.add_class::<image::ImageReader>()?;
    module.add_class::<writer::ImageWriter>()?;
    module.add("UPDATE", flat::UPDATE)?;
    module.add("DELETE", flat::DELETE)?;
    Ok(())
}

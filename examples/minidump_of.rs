//! Writes a minidump of a running process, as a crash handler would (rust-minidump's
//! minidump-writer, through ptrace): what `fixtures/symbolize/stackwalk/make.sh` walks
//! with a real stack walker to get its text.
//!
//! ```sh
//! cargo run --example minidump_of -- PID OUT.dmp
//! ```

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(pid), Some(out)) = (args.next(), args.next()) else {
        return Err("usage: minidump_of PID OUT.dmp".into());
    };
    let pid: i32 = pid.parse()?;
    let mut file = std::fs::File::create(out)?;
    minidump_writer::minidump_writer::MinidumpWriterConfig::new(pid, pid).write(&mut file)?;
    Ok(())
}

//! Just enough RESP (Redis's wire protocol) to ping a server, ask it to save and shut
//! down, and let a test read a value back: one command per connection, one reply line;
//! or a few commands on one connection, for those whose meaning is the connection's
//! (`WAIT` waits for the replication of that connection's last write).
//!
//! Written by hand so the sandbox does not depend on a Redis client: the crates under
//! test bring their own, and a harness that shared it could hide the client's bugs.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// Sends `args` as one command to the server on `127.0.0.1:port` and reads its reply.
///
/// The reply is the first line without its `\r\n` (`+PONG`, `:12`, `-ERR ...`, `*3`,
/// `$-1` for a missing value), except a bulk string, which is its content. A closed
/// connection before any reply is `UnexpectedEof` (what `SHUTDOWN` does on success).
pub(super) fn command(port: u16, args: &[&str], timeout: Duration) -> io::Result<String> {
    let mut replies = pipeline(port, &[args], timeout)?;
    replies.pop().ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "no reply"))
}

/// Sends `commands` in order on one connection to the server on `127.0.0.1:port` and
/// reads their replies, one each, as [`command`] reads one. The timeout is per read and
/// write, not for the whole.
pub(super) fn pipeline(port: u16, commands: &[&[&str]], timeout: Duration) -> io::Result<Vec<String>> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(&commands.iter().flat_map(|args| encode(args)).collect::<Vec<u8>>())?;
    let mut reader = BufReader::new(stream);
    commands.iter().map(|_| read_reply(&mut reader)).collect()
}

/// A command as RESP sends it: an array of bulk strings, lengths in bytes.
fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn read_reply(reader: &mut impl BufRead) -> io::Result<String> {
    let line = read_line(reader)?;
    // `$-1` (no such value) does not parse as a length, so it is returned as it came.
    let Some(len) = line.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) else {
        return Ok(line);
    };
    // Read through `take` rather than allocating the announced length up front.
    let want = len.saturating_add(2);
    let mut body = Vec::new();
    reader.take(want as u64).read_to_end(&mut body)?;
    if body.len() != want || !body.ends_with(b"\r\n") {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "bulk reply cut short"));
    }
    body.truncate(len);
    utf8(body)
}

fn read_line(reader: &mut impl BufRead) -> io::Result<String> {
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed before a reply"));
    }
    if !line.ends_with(b"\r\n") {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "reply line cut short"));
    }
    line.truncate(line.len() - 2);
    utf8(line)
}

fn utf8(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    fn reply(bytes: &[u8]) -> io::Result<String> {
        read_reply(&mut Cursor::new(bytes.to_vec()))
    }

    #[test]
    fn a_command_is_an_array_of_bulk_strings_with_byte_lengths() {
        assert_eq!(encode(&["PING"]), b"*1\r\n$4\r\nPING\r\n");
        assert_eq!(encode(&["SET", "k", "é"]), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\né\r\n".as_bytes());
    }

    #[test]
    fn lines_come_back_raw_and_bulk_strings_as_their_content() {
        assert_eq!(reply(b"+PONG\r\n").unwrap(), "+PONG");
        assert_eq!(reply(b":12\r\n").unwrap(), ":12");
        assert_eq!(reply(b"-ERR no\r\n").unwrap(), "-ERR no");
        assert_eq!(reply(b"$-1\r\n").unwrap(), "$-1");
        assert_eq!(reply(b"$0\r\n\r\n").unwrap(), "");
        assert_eq!(reply(b"$7\r\na b\r\nc \r\n").unwrap(), "a b\r\nc ");
    }

    #[test]
    fn a_closed_or_cut_reply_is_an_error() {
        assert_eq!(reply(b"").unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(reply(b"+PON").unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(reply(b"$5\r\nab").unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(
            reply(format!("${}\r\nab\r\n", usize::MAX).as_bytes()).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
    }
}

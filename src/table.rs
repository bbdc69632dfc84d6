//! Text tables fitted to the terminal (`lcp list`, `lcp test`, and every other
//! command that prints one): cells on one line with control characters escaped, long
//! cells cut with `…`, columns narrowed to the terminal's width.
//!
//! Owns: measuring the terminal, cutting cells, laying out columns.
//!
//! Must never: print (it returns text), or let a cell span lines.

use crate::shown;

/// The width of the terminal `lcp list` prints to: `$COLUMNS` when set, else the
/// terminal's own; `None` when stdout is not a terminal (a file or a pipe gets every
/// cell whole).
pub(crate) fn terminal_width() -> Option<usize> {
    if let Some(columns) = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse().ok()).filter(|&c| c > 0) {
        return Some(columns);
    }
    let mut size = libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: `TIOCGWINSZ` writes one `winsize` into `size`; on anything but a
    // terminal it fails and writes nothing.
    let asked = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    (asked == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// Narrows the columns of `rows` until a line fits in `width` characters: each step
/// takes one character from the widest column of `narrowing` still above its floor
/// (the later one on a tie), and cells are cut at the end given, with `…`. A table
/// still too wide with every column at its floor is left so: the floors keep each
/// column readable.
pub(crate) fn fit<const N: usize>(rows: &mut [[String; N]], width: usize, narrowing: &[(usize, usize, Cut)]) {
    let natural = column_widths(rows);
    let mut widths = natural.clone();
    let mut line = widths.iter().sum::<usize>() + 2 * N.saturating_sub(1);
    while line > width {
        let widest = narrowing.iter().filter(|&&(c, floor, _)| widths[c] > floor).max_by_key(|&&(c, _, _)| widths[c]);
        let Some(&(column, _, _)) = widest else { break };
        widths[column] -= 1;
        line -= 1;
    }
    for &(column, _, cut) in narrowing {
        if widths[column] < natural[column] {
            for row in rows.iter_mut() {
                row[column] = elide(&row[column], widths[column], cut);
            }
        }
    }
}

/// `text` in at most `width` characters, `…` standing for what was cut.
fn elide(text: &str, width: usize, cut: Cut) -> String {
    let chars = text.chars().count();
    if chars <= width {
        return text.to_string();
    }
    let kept = width.saturating_sub(1);
    match cut {
        Cut::End => text.chars().take(kept).chain(['…']).collect(),
        Cut::Start => ['…'].into_iter().chain(text.chars().skip(chars - kept)).collect(),
    }
}

/// The width of each column: its longest cell, in characters.
fn column_widths<const N: usize>(rows: &[[String; N]]) -> Vec<usize> {
    (0..N).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect()
}

/// Rows as left-aligned columns, each line ending in a newline.
pub(crate) fn columns<const N: usize>(rows: &[[String; N]]) -> String {
    let widths = column_widths(rows);
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, (text, width)) in row.iter().zip(&widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(text);
            line.extend(std::iter::repeat_n(' ', width - text.chars().count()));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Which end of a long cell is cut: a source keeps its end (the file name and line).
#[derive(Clone, Copy)]
pub(crate) enum Cut {
    /// Keep the end.
    Start,
    /// Keep the start.
    End,
}

/// A table cell: control characters become spaces, and text over [`CELL_CHARS`]
/// characters is cut to that many, with `…` where it was cut.
pub(crate) fn cell(text: &str, cut: Cut) -> String {
    const CELL_CHARS: usize = 72;
    // Escaped (SPEC §17): a name or a description cannot draw over the table.
    elide(&shown::line(text), CELL_CHARS, cut)
}

/// `1 tool`, `2 tools`.
pub(crate) fn counted(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

//! Text tables fitted to the terminal (`lcp list`, `lcp test`, and every other
//! command that prints one): cells on one line with control characters escaped, long
//! cells cut with `…`, columns narrowed to the terminal's width. Widths are counted
//! in the terminal's columns (a CJK letter takes two, a combining mark none).
//!
//! Owns: measuring the terminal, cutting cells, laying out columns.
//!
//! Must never: print (it returns text), or let a cell span lines.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

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

/// Narrows the columns of `rows` until a line fits in `width` columns: each step
/// takes one column from the widest column of `narrowing` still above its floor
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

/// `text` in at most `width` columns, `…` standing for what was cut.
fn elide(text: &str, width: usize, cut: Cut) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    // Characters are taken from the end kept while their own widths fit beside the
    // `…`; then the kept text is cut again while it is wider as a whole (an emoji and
    // its variation selector take two columns, each alone one), and a mark whose
    // letter was cut goes too.
    let room = width.saturating_sub(1);
    let mut used = 0;
    let fits = |c: &char| {
        used += c.width().unwrap_or(0);
        used <= room
    };
    match cut {
        Cut::End => {
            let mut kept: String = text.chars().take_while(fits).collect();
            while kept.width() > room {
                kept.pop();
            }
            kept + "…"
        }
        Cut::Start => {
            let kept: Vec<char> = text.chars().rev().take_while(fits).collect();
            let mut kept: String = kept.into_iter().rev().collect();
            while kept.width() > room || kept.chars().next().is_some_and(|c| c.width() == Some(0)) {
                kept.remove(0);
            }
            format!("…{kept}")
        }
    }
}

/// The width of each column: its widest cell, in the terminal's columns.
fn column_widths<const N: usize>(rows: &[[String; N]]) -> Vec<usize> {
    (0..N).map(|c| rows.iter().map(|r| r[c].width()).max().unwrap_or(0)).collect()
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
            line.extend(std::iter::repeat_n(' ', width - text.width()));
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

/// A table cell: control characters become spaces, and text over [`CELL_COLUMNS`]
/// columns is cut to that many, with `…` where it was cut.
pub(crate) fn cell(text: &str, cut: Cut) -> String {
    const CELL_COLUMNS: usize = 72;
    // Escaped (SPEC §17): a name or a description cannot draw over the table.
    elide(&shown::line(text), CELL_COLUMNS, cut)
}

/// `1 tool`, `2 tools`.
pub(crate) fn counted(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_laid_out_and_cut_in_the_terminals_columns() {
        let rows = [["天気予報".to_string(), "b".to_string()], ["ab".to_string(), "c".to_string()]];
        // `天気予報` takes 8 columns: `ab` is padded to 8, not to 4.
        assert_eq!(columns(&rows), "天気予報  b\nab        c\n");
        assert_eq!(elide("天気予報", 5, Cut::End), "天気…");
        assert_eq!(elide("天気予報", 5, Cut::Start), "…予報");
        assert_eq!(elide("abcdef", 4, Cut::End), "abc…");
        assert_eq!(elide("abcdef", 4, Cut::Start), "…def");
        assert_eq!(elide("天気", 4, Cut::End), "天気");
        // An emoji with its variation selector takes two columns, as a whole.
        assert_eq!(elide("⚠\u{fe0f}⚠\u{fe0f}⚠\u{fe0f}", 5, Cut::End), "⚠\u{fe0f}⚠\u{fe0f}…");
        assert_eq!(elide("⚠\u{fe0f}⚠\u{fe0f}⚠\u{fe0f}", 5, Cut::Start), "…⚠\u{fe0f}⚠\u{fe0f}");
        // A mark whose letter is cut is cut too.
        assert_eq!(elide("ae\u{301}bc", 3, Cut::Start), "…bc");
        let mut rows = [["天気予報天気予報".to_string(), "x".to_string()]];
        fit(&mut rows, 9, &[(0, 2, Cut::End)]);
        assert_eq!(columns(&rows), "天気…  x\n");
    }
}

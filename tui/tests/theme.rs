//! The light palette (`ui.theme: light`, or a light background found with OSC 11): the same
//! live area recoloured for a white background, kept as a snapshot of cells and styles.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::time::{Duration, Instant};

use common::*;
use corvid_protocol::{ApprovalMode, ApprovalPreview};
use corvid_tui::app::{App, TuiOptions};
use corvid_tui::theme::{Palette, recolor};
use insta::assert_snapshot;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;

const WIDTH: u16 = 60;

fn drawn(palette: Palette) -> Buffer {
    let mut app = App::new(&TuiOptions {
        compact: false,
        model: "demo-large".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Light,
        sessions: None,
    });
    let t0 = Instant::now();
    for ev in [
        task_started("fix it"),
        started("a", "read_file", "Read src/lib.rs"),
        ok("a", "read_file", "fn main() {}"),
        permission(
            "b",
            "edit",
            "Edit src/lib.rs",
            ApprovalPreview::Diff(sample_diff()),
        ),
    ] {
        app.chat.on_event_at(&ev, t0);
    }
    let view = app.view(t0 + Duration::from_secs(3));
    let (lines, _) = view.lines(WIDTH);
    let area = Rect::new(0, 0, WIDTH, u16::try_from(lines.len()).unwrap());
    let mut buf = Buffer::empty(area);
    view.render(area, &mut buf);
    recolor(&mut buf, palette);
    buf
}

#[test]
fn the_light_palette_darkens_dim_yellow_and_cyan_text_for_a_white_background() {
    let light = drawn(Palette::Light);
    let colours: Vec<Color> = light.content.iter().map(|c| c.fg).collect();
    for unreadable_on_white in [Color::Yellow, Color::Cyan, Color::White, Color::DarkGray] {
        assert!(
            !colours.contains(&unreadable_on_white),
            "{unreadable_on_white:?} left in the light palette"
        );
    }
    assert_ne!(drawn(Palette::Dark), light);
    assert_snapshot!(format!("{light:?}"));
}

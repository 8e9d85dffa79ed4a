use super::*;

const MSS: usize = 1000;

#[test]
fn receiver_sws_holds_the_edge_until_the_window_can_grow_by_min_half_buffer_mss() {
    let sws = ReceiverSws::Rfc1122;
    // 64 KB buffer, the step is one MSS.
    assert_eq!(
        sws.window(65_536, 0, 60_000, MSS),
        65_536,
        "grows by 5536 ≥ MSS"
    );
    assert_eq!(
        sws.window(65_536, 0, 64_800, MSS),
        64_800,
        "736 < MSS: edge held"
    );
    assert_eq!(
        sws.window(65_536, 65_000, 0, MSS),
        0,
        "536 free < MSS: stay closed"
    );
    assert_eq!(
        sws.window(65_536, 64_536, 0, MSS),
        1000,
        "exactly an MSS free: open"
    );
    // A small buffer: the step is half the buffer.
    assert_eq!(sws.window(1200, 700, 0, MSS), 0, "500 < 600");
    assert_eq!(sws.window(1200, 600, 0, MSS), 600);
    // Off: every freed byte is advertised at once.
    let off = ReceiverSws::Off;
    assert_eq!(off.window(65_536, 0, 64_800, MSS), 65_536);
    assert_eq!(off.window(65_536, 65_000, 0, MSS), 536);
}

fn state(queued: usize, usable: usize, in_flight: usize) -> SendState {
    SendState {
        queued,
        usable_window: usable,
        max_send_window: 64_000,
        mss: MSS,
        in_flight,
        push: true,
        override_expired: false,
        fin_queued: false,
    }
}

const BOTH: SenderPolicy = SenderPolicy {
    sws_avoidance: true,
    nagle: true,
};
const NEITHER: SenderPolicy = SenderPolicy {
    sws_avoidance: false,
    nagle: false,
};

#[test]
fn a_full_segment_always_goes_and_nothing_goes_without_data_or_window() {
    for p in [BOTH, NEITHER] {
        assert_eq!(
            p.decide(&state(5000, 64_000, 3000)),
            SendDecision::Send(MSS)
        );
        assert_eq!(p.decide(&state(0, 64_000, 0)), SendDecision::Wait);
        assert_eq!(p.decide(&state(500, 0, 0)), SendDecision::Wait);
    }
}

#[test]
fn nagle_holds_a_small_segment_while_data_is_unacknowledged() {
    let nagle_only = SenderPolicy {
        sws_avoidance: false,
        nagle: true,
    };
    assert_eq!(
        nagle_only.decide(&state(10, 64_000, 0)),
        SendDecision::Send(10)
    );
    assert_eq!(nagle_only.decide(&state(10, 64_000, 1)), SendDecision::Wait);
    assert_eq!(
        NEITHER.decide(&state(10, 64_000, 1)),
        SendDecision::Send(10)
    );
    assert_eq!(BOTH.decide(&state(10, 64_000, 0)), SendDecision::Send(10));
    assert_eq!(BOTH.decide(&state(10, 64_000, 1)), SendDecision::Wait);
}

#[test]
fn nagle_lets_a_small_segment_go_when_a_fin_follows_it() {
    let mut closing = state(10, 64_000, 1);
    assert_eq!(BOTH.decide(&closing), SendDecision::Wait);
    closing.fin_queued = true;
    assert_eq!(BOTH.decide(&closing), SendDecision::Send(10));
    // SWS avoidance still holds what does not fit the window.
    let mut squeezed = state(3000, 100, 1);
    squeezed.fin_queued = true;
    assert_eq!(BOTH.decide(&squeezed), SendDecision::Wait);
}

#[test]
fn sender_sws_waits_for_a_usable_window_worth_sending() {
    let sws_only = SenderPolicy {
        sws_avoidance: true,
        nagle: false,
    };
    // 3000 bytes queued, a 100-byte window: (a) and (b) fail, 100 < 32000.
    assert_eq!(sws_only.decide(&state(3000, 100, 0)), SendDecision::Wait);
    assert_eq!(
        NEITHER.decide(&state(3000, 100, 0)),
        SendDecision::Send(100)
    );
    // (c): half the largest window offered can go.
    let mut small_peer = state(3000, 600, 0);
    small_peer.max_send_window = 1200;
    assert_eq!(sws_only.decide(&small_peer), SendDecision::Send(600));
    small_peer.usable_window = 599;
    assert_eq!(sws_only.decide(&small_peer), SendDecision::Wait);
    // (d): pushed data goes when the override timer expires.
    let mut stuck = state(3000, 100, 0);
    stuck.override_expired = true;
    assert_eq!(sws_only.decide(&stuck), SendDecision::Send(100));
    stuck.push = false;
    assert_eq!(sws_only.decide(&stuck), SendDecision::Wait);
    // (b): all of a pushed small write fits.
    assert_eq!(
        sws_only.decide(&state(300, 400, 2000)),
        SendDecision::Send(300)
    );
    let mut unpushed = state(300, 400, 0);
    unpushed.push = false;
    assert_eq!(sws_only.decide(&unpushed), SendDecision::Wait);
}

#[test]
fn delayed_ack_every_second_full_segment_or_the_timer() {
    let t = Duration::from_millis(200);
    let mut d = DelayedAck::new(DelayedAckPolicy::EverySecond(t));
    assert_eq!(d.on_data(true, false), AckDecision::Delay(t));
    assert_eq!(d.on_data(true, false), AckDecision::Now);
    d.on_ack_sent();
    assert!(!d.owed());
    // Small segments do not count towards the second full one.
    assert_eq!(d.on_data(false, false), AckDecision::Delay(t));
    assert_eq!(d.on_data(false, false), AckDecision::Delay(t));
    assert_eq!(d.on_data(true, false), AckDecision::Delay(t));
    assert!(d.owed());
    // Out-of-order data is acknowledged at once, whatever the policy.
    assert_eq!(d.on_data(false, true), AckDecision::Now);
}

#[test]
fn delayed_ack_off_timer_and_drain_policies() {
    let t = Duration::from_millis(40);
    let mut off = DelayedAck::new(DelayedAckPolicy::Off);
    assert_eq!(off.on_data(false, false), AckDecision::Now);
    let mut timer = DelayedAck::new(DelayedAckPolicy::Timer(t));
    for _ in 0..5 {
        assert_eq!(timer.on_data(true, false), AckDecision::Delay(t));
    }
    let mut drain = DelayedAck::new(DelayedAckPolicy::Drain);
    assert_eq!(
        drain.on_application_drained(),
        AckDecision::Hold,
        "nothing owed"
    );
    assert_eq!(drain.on_data(true, false), AckDecision::Hold);
    assert_eq!(drain.on_data(true, false), AckDecision::Hold);
    assert_eq!(drain.on_application_drained(), AckDecision::Now);
    drain.on_ack_sent();
    assert_eq!(drain.on_application_drained(), AckDecision::Hold);
    assert_eq!(timer.on_application_drained(), AckDecision::Hold);
}

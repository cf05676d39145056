import Foundation
import SightlineVision
import SightlineSupport
import SightlinePipeline

/// One `/ws?video=h264` client's place in the video feed, and the policy
/// that keeps it on clean pictures (DESIGN.md):
///
/// - It starts on a keyframe no older than `joinKeyframeAge` behind the
///   newest (asking the sink for one, which comes within the forced-keyframe gap).
///   On a rendition whose keyframes cannot be asked for (a camera's own
///   H.264, `VideoFeed.keyframesOnRequest`), it starts on the newest keyframe
///   however old, and gets every unit since at once ("catching up": a
///   `catchUp` notice first, and no lag check until it has them), so it shows
///   a picture at once rather than seconds later at the camera's next keyframe.
/// - Each frame is its JSON, then its access unit; nothing comes between them.
/// - When the next unit it would get is more than `maxLag` behind the newest
///   (its socket drains slower than frames come), it is moved ahead: nothing
///   more until a keyframe at or after that point (one is asked for), so it
///   never decodes a picture whose reference it lacks.
/// - Auto rendition: after `downgradeSkips` such moves within
///   `downgradeWindow` it goes to `low` (smaller, fewer frames, capped
///   bitrate); after `upgradeAfter` seconds on `low` without a move it tries
///   `main` again, and each try that fails within `upgradeFailWindow` doubles
///   the wait (up to `upgradeAfterMax`).
///
/// Owned by the lws service thread (in its `Connection`); the feed it reads
/// and tells about keyframes and viewers is thread-safe.
package final class H264Viewer {
    package struct Policy {
        package var maxLag = 0.5
        var joinKeyframeAge = 0.25
        var downgradeSkips = 2
        var downgradeWindow = 10.0
        var upgradeAfter = 20.0
        var upgradeAfterMax = 320.0
        var upgradeFailWindow = 15.0
        package var lowAvailable = true

        package init() {}
    }

    package enum Step {
        /// Send this unit's JSON now; its access unit goes on the next call.
        case json(VideoFeed.Unit)
        /// Send this unit's access unit (its JSON went just before).
        case accessUnit(VideoFeed.Unit)
        /// Send this text message (a `catchUp` notice) before the next unit.
        case notice(Data)
        /// Nothing to send until the next frame.
        case wait
    }

    package enum Event: Equatable {
        case skippedToKeyframe
        case moved(from: VideoRendition, to: VideoRendition)
    }

    package private(set) var rendition: VideoRendition
    let pinned: Bool
    let policy: Policy
    /// The index of the next unit to send; nil while waiting for a keyframe.
    private(set) var next: UInt64?
    /// While waiting: the first index a keyframe may have.
    private var keyframeFrom: UInt64 = 0
    /// A unit whose JSON went out and whose access unit is due.
    private(set) var pending: VideoFeed.Unit?
    private var skipTimes: [UInt64] = []
    private var renditionSince: UInt64
    private var upgradeAfter: Double
    private var upgradedAt: UInt64?
    /// Joining (or moved to another rendition): it has had no unit there yet.
    private var joining = true
    /// Units up to this index are a joiner's catch-up: sent whatever their age.
    private(set) var catchUpThrough: UInt64 = 0

    /// Joins `feed` (counts as a viewer there, asks for a keyframe).
    package init(format pinned: VideoRendition?, policy: Policy, feed: VideoFeed, now: UInt64) {
        rendition = pinned ?? .main
        self.pinned = pinned != nil
        self.policy = policy
        renditionSince = now
        upgradeAfter = policy.upgradeAfter
        feed.viewerJoined(rendition)
    }

    /// The connection closed.
    package func leave(_ feed: VideoFeed) {
        feed.viewerLeft(rendition)
    }

    /// What to send on a writeable callback at `now` (monotonic nanoseconds),
    /// and what happened on the way (for the counters).
    package func step(_ feed: VideoFeed, now: UInt64) -> (Step, [Event]) {
        if let unit = pending {
            pending = nil
            next = unit.index + 1
            return (.accessUnit(unit), [])
        }
        var events: [Event] = []
        if !pinned, rendition == .low, now &- max(renditionSince, skipTimes.last ?? 0) >= UInt64(upgradeAfter * 1e9) {
            move(to: .main, feed, now: now, events: &events)
            upgradedAt = now
        }
        guard let newest = feed.newest(rendition) else { return (.wait, events) }
        if let index = next {
            if index > newest.index { return (.wait, events) }
            if let unit = feed.unit(rendition, at: index),
               index <= catchUpThrough || Self.seconds(newest.capturedNanos &- unit.capturedNanos) <= policy.maxLag {
                pending = unit
                return (.json(unit), events)
            }
            // Behind (or its place is gone): on to the next keyframe.
            events.append(.skippedToKeyframe)
            skipTimes.append(now)
            skipTimes.removeAll { Self.seconds(now &- $0) > policy.downgradeWindow }
            next = nil
            keyframeFrom = index
            feed.requestKeyframe(rendition)
            if !pinned, rendition == .main, policy.lowAvailable, skipTimes.count >= policy.downgradeSkips {
                if let upgradedAt, Self.seconds(now &- upgradedAt) <= policy.upgradeFailWindow {
                    upgradeAfter = min(policy.upgradeAfterMax, upgradeAfter * 2)
                }
                move(to: .low, feed, now: now, events: &events)
                guard let newest = feed.newest(rendition) else { return (.wait, events) }
                return (waitForKeyframe(feed, newest: newest), events)
            }
        }
        return (waitForKeyframe(feed, newest: newest), events)
    }

    /// Whether the client has something to send on its next writeable callback.
    package func hasWork(_ feed: VideoFeed) -> Bool {
        if pending != nil { return true }
        guard let newest = feed.newest(rendition) else { return false }
        return (next ?? keyframeFrom) <= newest.index
    }

    /// Whether the unit at `index` is part of a joiner's catch-up (its latency is not the stream's).
    package func isCatchingUp(_ index: UInt64) -> Bool { index <= catchUpThrough }

    private func waitForKeyframe(_ feed: VideoFeed, newest: VideoFeed.Unit) -> Step {
        if !feed.keyframesOnRequest(rendition) {
            // A camera's keyframes come when it sends them. A joiner starts on the
            // newest and catches up; a viewer moved ahead takes the first at or
            // after where it stopped while it is no older than a lag.
            let key = joining ? feed.newestKeyframe(rendition, from: 0) : feed.newestKeyframe(rendition, from: keyframeFrom)
            guard let key, joining || Self.seconds(newest.capturedNanos &- key.capturedNanos) <= policy.maxLag else {
                return .wait
            }
            joining = false
            next = key.index
            guard key.index < newest.index else {
                pending = key
                return .json(key)
            }
            catchUpThrough = newest.index
            let notice = #"{"type":"catchUp","seq":\#(key.seq),"through":\#(newest.seq),"frames":\#(newest.index - key.index + 1)}"#
            return .notice(Data(notice.utf8))
        }
        guard let key = feed.newestKeyframe(rendition, from: keyframeFrom),
              Self.seconds(newest.capturedNanos &- key.capturedNanos) <= policy.joinKeyframeAge else {
            // None, or it went stale before this socket could take it: ask
            // (again; the sink forces at most one per gap).
            feed.requestKeyframe(rendition)
            return .wait
        }
        joining = false
        pending = key
        return .json(key)
    }

    private func move(to target: VideoRendition, _ feed: VideoFeed, now: UInt64, events: inout [Event]) {
        guard target != rendition else { return }
        feed.viewerLeft(rendition)
        feed.viewerJoined(target)
        events.append(.moved(from: rendition, to: target))
        rendition = target
        renditionSince = now
        next = nil
        keyframeFrom = 0
        joining = true
        catchUpThrough = 0
        skipTimes.removeAll()
    }

    private static func seconds(_ nanos: UInt64) -> Double { Double(nanos) / 1e9 }
}

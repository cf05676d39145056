/// A tracked face's `eyesClosed` as shown live: a new state is taken only
/// when two readings in a row agree on it, so one doubtful reading does not
/// flip the label.
///
/// Why: a face read again every pass gives readings that can alternate when
/// its eyes sit near the closed/open limits (a laugh that narrows them, a
/// squint). Shown as they come, the label flickered: the laughing girl of
/// 2008_001009.jpg panned for 30 s changed state 55 times. Two agreeing
/// readings cost a closing one reading's delay (`faces.attributesEverySeconds`)
/// and leave a single stray reading unshown. A still photo (`sightline detect`)
/// is read once and shown as read.
struct SteadyEyes: Equatable, Sendable {
    /// The state shown; nil while the face cannot be judged.
    private(set) var shown: Bool?
    /// A reading that disagreed with `shown`, waiting for a second one.
    private var pending: Bool?

    init() {}

    /// Takes a new reading (nil: the face could not be judged this time) and
    /// returns the state to show.
    mutating func add(_ reading: Bool?) -> Bool? {
        guard let reading else {
            // Too small, turned or blurred now: nothing to show, and what
            // comes next is a fresh start.
            shown = nil
            pending = nil
            return nil
        }
        if shown == nil || shown == reading || pending == reading {
            shown = reading
            pending = nil
        } else {
            pending = reading
        }
        return shown
    }
}

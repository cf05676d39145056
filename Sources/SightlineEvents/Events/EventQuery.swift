import Foundation
import SightlineVision

/// What `GET /api/events` asks for: filters (kind, label or name, a time
/// range the event overlaps), a page size, and where the previous page
/// ended. Answers come newest first (by start time).
public struct EventQuery: Sendable, Equatable {
    public static let defaultLimit = 50
    public static let maximumLimit = 500

    public var kind: Detection.Kind?
    /// A template label, "face", or a person's name (case-insensitive).
    public var labelOrName: String?
    /// Only events seen at or after `from` and starting at or before `to` (Unix seconds).
    public var from: Double?
    public var to: Double?
    /// Only events older than this one (the previous page's `next`).
    public var before: String?
    public var limit = EventQuery.defaultLimit

    public init(kind: Detection.Kind? = nil, labelOrName: String? = nil, from: Double? = nil, to: Double? = nil,
                before: String? = nil, limit: Int = EventQuery.defaultLimit) {
        self.kind = kind
        self.labelOrName = labelOrName
        self.from = from
        self.to = to
        self.before = before
        self.limit = limit
    }

    /// A refusal the API answers with 400.
    public struct Problem: Error, Equatable, Sendable {
        public let error: String
        public let detail: String
    }

    /// `from` and `to` (Unix seconds, each optional, `from` not after `to`)
    /// from query parameters: here, and for `/api/recordings`.
    public static func timeRange(_ parameters: [String: String]) -> Result<(from: Double?, to: Double?), Problem> {
        var bounds: [String: Double] = [:]
        for key in ["from", "to"] {
            guard let raw = parameters[key], !raw.isEmpty else { continue }
            guard let value = Double(raw), value.isFinite, value >= 0 else {
                return .failure(Problem(error: "bad \(key)", detail: "Unix seconds, like \(key)=1763802000.5; got '\(raw.prefix(32))'"))
            }
            bounds[key] = value
        }
        if let from = bounds["from"], let to = bounds["to"], from > to {
            return .failure(Problem(error: "bad time range", detail: "from (\(from)) is after to (\(to))"))
        }
        return .success((bounds["from"], bounds["to"]))
    }

    /// From the request's query parameters: `kind`, `label`, `name`, `from`,
    /// `to`, `before`, `limit`. Unknown parameters are refused, so a typo
    /// does not silently list everything.
    public static func parse(_ parameters: [String: String]) -> Result<EventQuery, Problem> {
        let known: Set<String> = ["kind", "label", "name", "from", "to", "before", "limit"]
        if let unknown = parameters.keys.sorted().first(where: { !known.contains($0) }) {
            return .failure(Problem(error: "unknown parameter",
                                    detail: "'\(unknown.prefix(32))'; use \(known.sorted().joined(separator: ", "))"))
        }
        var query = EventQuery()
        if let raw = parameters["kind"], !raw.isEmpty {
            guard let kind = Detection.Kind(rawValue: raw) else {
                return .failure(Problem(error: "bad kind", detail: "use kind=face or kind=template, got '\(raw.prefix(32))'"))
            }
            query.kind = kind
        }
        let label = parameters["label"].flatMap { $0.isEmpty ? nil : $0 }
        let name = parameters["name"].flatMap { $0.isEmpty ? nil : $0 }
        if label != nil, name != nil {
            return .failure(Problem(error: "label and name", detail: "filter by a label or by a name, not both"))
        }
        query.labelOrName = label ?? name
        if let text = query.labelOrName, text.count > 64 {
            return .failure(Problem(error: "bad filter", detail: "a label or name has at most 64 characters"))
        }
        switch timeRange(parameters) {
        case .success(let range): (query.from, query.to) = range
        case .failure(let problem): return .failure(problem)
        }
        if let raw = parameters["before"], !raw.isEmpty {
            guard EventRecord.isValidID(raw) else {
                return .failure(Problem(error: "bad cursor", detail: "before= takes an event id from a previous page's next"))
            }
            query.before = raw
        }
        if let raw = parameters["limit"], !raw.isEmpty {
            guard let limit = Int(raw), (1...maximumLimit).contains(limit) else {
                return .failure(Problem(error: "bad limit", detail: "1 to \(maximumLimit), got '\(raw.prefix(32))'"))
            }
            query.limit = limit
        }
        return .success(query)
    }

    /// Whether `record` passes the filters (not the cursor or the limit).
    public func accepts(_ record: EventRecord) -> Bool {
        if let kind, record.kind != kind { return false }
        if let labelOrName, !record.matches(labelOrName: labelOrName) { return false }
        if let from, (record.endTime ?? record.lastTime) < from { return false }
        if let to, record.startTime > to { return false }
        return true
    }
}

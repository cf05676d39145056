import Foundation

/// What the capture loop is doing, as /api/state reports it.
public struct SourceStatus: Sendable, Equatable {
    public enum State: String, Sendable { case starting, live, noSignal }
    public var spec: String
    public var name: String
    public var state: State
    public var detail: String
    public var format: SourceFormat?
    /// Seconds until the next reopen attempt, while in noSignal.
    public var retryInSeconds: Double?

    public init(spec: String, name: String, state: State, detail: String = "",
                format: SourceFormat? = nil, retryInSeconds: Double? = nil) {
        self.spec = spec
        self.name = name
        self.state = state
        self.detail = detail
        self.format = format
        self.retryInSeconds = retryInSeconds
    }
}

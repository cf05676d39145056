import Foundation

/// Polls `condition` for up to `seconds`: for another thread to get
/// somewhere (its work, a socket), never for time to pass.
package func waitUntil(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let end = Date(timeIntervalSinceNow: seconds)
    while Date() < end {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.01)
    }
    return condition()
}

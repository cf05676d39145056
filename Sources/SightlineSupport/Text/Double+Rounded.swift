import Foundation

/// A figure for JSON and logs: `0.123456.rounded(toPlaces: 3)` is 0.123.
extension Double {
    package func rounded(toPlaces places: Int) -> Double {
        let factor = pow(10.0, Double(places))
        return (self * factor).rounded() / factor
    }
}

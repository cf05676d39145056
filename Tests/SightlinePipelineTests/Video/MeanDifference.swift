import SightlineVision

/// The mean absolute difference of two pictures of one size, per channel
/// value (0-255), over each row's pixels (not its padding).
func meanDifference(_ a: ImageBuffer, _ b: ImageBuffer) -> Double {
    precondition(a.width == b.width && a.height == b.height && a.channels == b.channels)
    var total = 0
    for y in 0..<a.height {
        let rowA = a.bytes + y * a.stride, rowB = b.bytes + y * b.stride
        for x in 0..<(a.width * a.channels) { total += abs(Int(rowA[x]) - Int(rowB[x])) }
    }
    return Double(total) / Double(a.width * a.height * a.channels)
}

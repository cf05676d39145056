public enum SightlineVersion { public static let string = "0.1.0" }

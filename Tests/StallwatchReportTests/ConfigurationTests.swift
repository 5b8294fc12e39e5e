import Glibc
import Foundation
import StallwatchPolicy
import StallwatchReport
import Testing

@Suite struct ConfigurationTests {
    @Test func defaultsAreMatrix() throws {
        let c = try WatchdogConfiguration().validated()
        #expect(c.threshold == .seconds(2))
        #expect(c.checkPeriod == .seconds(1))
        #expect(c.sampleInterval == .milliseconds(50))
        #expect(c.ringCapacity == 20)
        #expect(c.maxFrames == 100)
        #expect(c.threadCountCutoff == WatchdogConfiguration.defaultThreadCountCutoff(cores: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
        #expect(WatchdogConfiguration.defaultThreadCountCutoff(cores: 2) == 64)
        #expect(WatchdogConfiguration.defaultThreadCountCutoff(cores: 64) == 512)
        #expect(c.suspensionLimit == .seconds(10))
        #expect(c.reportCapPerWindow == 100)
        #expect(c.reportWindow == .seconds(86_400))
        #expect(c.sampleContinuously == false)
        #expect(c.suspicionFraction == 0.5)
        #expect(c.cpu == CPUConfiguration())
        #expect(c.cpu.sustainedMinimumDuration == .seconds(60))
    }

    @Test func millisecondThresholdIsValidAndDerivesPeriod() throws {
        let c = try WatchdogConfiguration(threshold: .milliseconds(200), sampleInterval: .milliseconds(10)).validated()
        #expect(c.checkPeriod == .milliseconds(100))
        #expect(c.ringCapacity == 10)
    }

    @Test(arguments: [
        (WatchdogConfiguration(threshold: .zero), "threshold"),
        (WatchdogConfiguration(threshold: .seconds(-1)), "threshold"),
        (WatchdogConfiguration(checkPeriod: .zero), "checkPeriod"),
        (WatchdogConfiguration(checkPeriod: .seconds(3)), "checkPeriod"),
        (WatchdogConfiguration(threshold: .milliseconds(40)), "sampleInterval"),
        (WatchdogConfiguration(sampleInterval: .seconds(2)), "sampleInterval"),
        (WatchdogConfiguration(sampleInterval: .milliseconds(-5)), "sampleInterval"),
        (WatchdogConfiguration(ringCapacity: 0), "ringCapacity"),
        (WatchdogConfiguration(maxFrames: 0), "maxFrames"),
        (WatchdogConfiguration(threadCountCutoff: 0), "threadCountCutoff"),
        (WatchdogConfiguration(suspensionLimit: .milliseconds(500)), "suspensionLimit"),
        (WatchdogConfiguration(reportCapPerWindow: -1), "reportCapPerWindow"),
        (WatchdogConfiguration(reportWindow: .zero), "reportWindow"),
        (WatchdogConfiguration(suspicionFraction: 0), "suspicionFraction"),
        (WatchdogConfiguration(suspicionFraction: 1.5), "suspicionFraction"),
        (WatchdogConfiguration(suspicionFraction: .nan), "suspicionFraction"),
        (WatchdogConfiguration(cpu: CPUConfiguration(processHighFraction: 0)), "cpu.processHighFraction"),
        (WatchdogConfiguration(cpu: CPUConfiguration(topThreadCount: 0)), "cpu.topThreadCount"),
        (WatchdogConfiguration(cpu: CPUConfiguration(sustainedAbandonRatio: 2)), "cpu.sustainedAbandonRatio"),
        (WatchdogConfiguration(cpu: CPUConfiguration(sustainedMinimumDuration: .zero)), "cpu.sustainedMinimumDuration"),
        (WatchdogConfiguration(cpu: CPUConfiguration(sustainedCoolDown: .seconds(-1))), "cpu.sustainedCoolDown"),
        (WatchdogConfiguration(cpu: CPUConfiguration(maximumReadingPeriod: .zero)), "cpu.maximumReadingPeriod"),
    ])
    func rejectsNonsenseNamingTheField(config: WatchdogConfiguration, field: String) {
        #expect {
            _ = try config.validated()
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            return error.field == field && error.description.hasPrefix(field + " = ")
        }
    }

    @Test func messageNamesFieldAndValue() {
        do {
            _ = try WatchdogConfiguration(ringCapacity: 0).validated()
            Issue.record("expected an error")
        } catch {
            #expect(error.description == "ringCapacity = 0: must be at least 1")
        }
    }

    @Test func codableUsesNanosecondKeysAndFillsDefaults() throws {
        let original = WatchdogConfiguration(threshold: .milliseconds(300), sampleInterval: .milliseconds(10))
        let data = try JSONEncoder().encode(original)
        let json = try #require(String(data: data, encoding: .utf8))
        #expect(json.contains("\"thresholdNanoseconds\":300000000"))
        #expect(try JSONDecoder().decode(WatchdogConfiguration.self, from: data) == original)

        let partial = try JSONDecoder().decode(WatchdogConfiguration.self, from: Data(#"{"thresholdNanoseconds":400000000}"#.utf8))
        #expect(partial.threshold == .milliseconds(400))
        #expect(partial.checkPeriod == .milliseconds(200))
        #expect(partial.ringCapacity == 4)
    }
}

@Suite struct SamplerLimitTests {
    @Test func valuesTheSamplerCannotServeAreRefusedByName() {
        for (configuration, field) in [
            (WatchdogConfiguration(maxFrames: 257), "maxFrames"),
            (WatchdogConfiguration(ringCapacity: 1025), "ringCapacity"),
        ] {
            #expect(throws: ConfigurationError.self) { try configuration.validated() }
            do { _ = try configuration.validated() } catch { #expect(error.field == field) }
        }
        #expect(throws: Never.self) { try WatchdogConfiguration(ringCapacity: 1024, maxFrames: 256).validated() }
    }

    @Test func aLongThresholdKeepsSampling() throws {
        // 200 s at 50 ms would want 2 000 samples a period; the ring holds 1 024.
        let c = try WatchdogConfiguration(threshold: .seconds(200)).validated()
        #expect(c.ringCapacity == WatchdogConfiguration.maximumRingCapacity)
    }
}

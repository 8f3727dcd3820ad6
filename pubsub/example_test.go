package pubsub_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// exampleBackend returns a list backend on the test Redis, under a prefix of its own. In an
// application: list.New(redis.NewClient(&redis.Options{Addr: "localhost:6379"}), list.Options{}).
func exampleBackend() (*list.Backend, func()) {
	opt, err := redis.ParseURL(redistest.SharedURL())
	if err != nil {
		panic(err)
	}
	client := redis.NewClient(opt)
	b, err := list.New(client, list.Options{Prefix: "example-" + time.Now().Format("150405.000000")})
	if err != nil {
		panic(err)
	}
	return b, func() { _ = b.Close(); _ = client.Close() }
}

// A Watermill router consumes a topic: a handler error nacks the message, which comes back
// after the subscriber's NackBackoff; after MaxDeliveries attempts it is dead-lettered, where
// the Admin API (and the relq CLI) shows it.
func Example_router() {
	b, done := exampleBackend()
	defer done()
	logger := watermill.NopLogger{}
	pub, _ := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, logger)
	sub, _ := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{
		Group:         "billing",
		MaxDeliveries: 3,
		NackBackoff:   pubsub.ExponentialBackoff(10*time.Millisecond, time.Second),
	}, logger)
	_ = sub.SubscribeInitialize("orders")

	charged := make(chan string, 1)
	router, _ := message.NewRouter(message.RouterConfig{}, logger)
	router.AddConsumerHandler("charge", "orders", sub, func(msg *message.Message) error {
		switch {
		case string(msg.Payload) == "card declined":
			pubsub.SetNackReason(msg, "declined by the bank") // kept with the dead letter
			return errors.New("declined")
		case pubsub.Attempt(msg) == 1:
			return errors.New("payment service timed out") // retried
		}
		charged <- fmt.Sprintf("charged %s on attempt %d", msg.Payload, pubsub.Attempt(msg))
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = router.Run(ctx) }()
	<-router.Running()

	_ = pub.Publish("orders", message.NewMessage("1", []byte("order 7")), message.NewMessage("2", []byte("card declined")))
	fmt.Println(<-charged)

	var dead []backend.DeadLetter
	for len(dead) == 0 {
		time.Sleep(10 * time.Millisecond)
		dead, _ = b.DeadLetters(ctx, &backend.DeadLettersParams{Topic: "orders", Group: "billing"})
	}
	fmt.Printf("dead letter: %s after %d attempts (%s)\n", dead[0].Envelope.Payload, dead[0].Attempts, dead[0].Reason)
	_ = router.Close()

	// Output:
	// charged order 7 on attempt 2
	// dead letter: card declined after 3 attempts (declined by the bank)
}

// SetDelay publishes a message that is delivered once its delay has passed, timed on the
// Redis clock.
func ExampleSetDelay() {
	b, done := exampleBackend()
	defer done()
	pub, _ := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, nil)
	sub, _ := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{Group: "reminders"}, nil)
	defer sub.Close()
	_ = sub.SubscribeInitialize("reminders")

	msg := message.NewMessage("1", []byte("renew your plan"))
	pubsub.SetDelay(msg, 200*time.Millisecond)
	sent := time.Now()
	_ = pub.Publish("reminders", msg)

	msgs, _ := sub.Subscribe(context.Background(), "reminders")
	got := <-msgs
	got.Ack()
	fmt.Printf("%s, not before its delay: %v\n", got.Payload, time.Since(sent) >= 200*time.Millisecond)

	// Output:
	// renew your plan, not before its delay: true
}

// Stats reads a group's counts, as the relq CLI, the dashboard and the Prometheus collector
// show them: here three messages wait for the group, one of them delayed.
func Example_stats() {
	b, done := exampleBackend()
	defer done()
	pub, _ := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, nil)
	sub, _ := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{Group: "billing"}, nil)
	defer sub.Close()
	_ = sub.SubscribeInitialize("orders") // registers the group without consuming

	later := message.NewMessage("3", []byte("c"))
	pubsub.SetDelay(later, time.Hour)
	_ = pub.Publish("orders", message.NewMessage("1", []byte("a")), message.NewMessage("2", []byte("b")), later)

	st, err := b.Stats(context.Background(), &backend.StatsParams{Topic: "orders", Group: "billing"})
	if err != nil {
		panic(err)
	}
	fmt.Printf("ready %d, delayed %d, pending %d, dead %d\n", st.Ready, st.Delayed, st.Pending, st.Dead)

	// Output:
	// ready 2, delayed 1, pending 0, dead 0
}
